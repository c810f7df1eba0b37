"""Analyses built on studies and procedures: completeness on real data (designs, estimators,
results), the restrictiveness–completeness frontier, and the quick check.

May import every layer below it (shared, eligible, engine, procedures); not the AI workflows or
the applications.
"""
