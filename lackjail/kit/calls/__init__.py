"""Call handling: the session that checks, runs and records every tool call of one run, and its
budgets.
"""
