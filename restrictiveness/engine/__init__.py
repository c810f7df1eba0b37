"""The Monte Carlo engine: the procedure protocol it runs, discrepancies, the failure protocol,
the study runner with its backends, checkpoints and thread pool for I/O-bound fits, usage
records (model calls, tokens, prices), and the results with their inference (ratio estimates,
paired contrasts, sensitivity bounds).

May import :mod:`restrictiveness.shared` and :mod:`restrictiveness.eligible`; never a concrete
procedure, an AI workflow or an application.
"""
