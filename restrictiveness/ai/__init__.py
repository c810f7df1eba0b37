"""AI workflows as procedures: the sandbox that runs untrusted programs, program procedures,
and language-model procedures (completions and agents) with their response cache.

May import the shared, eligible, engine and procedures layers.
"""
