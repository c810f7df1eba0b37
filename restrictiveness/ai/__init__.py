"""AI workflows as procedures: the sandbox that runs untrusted programs, program procedures,
language-model procedures (completions and agents) with their response cache, the clients
that connect them to OpenAI-compatible and Anthropic endpoints, and the planning of a run's
model calls (dry runs).

May import the shared, eligible, engine and procedures layers.
"""
