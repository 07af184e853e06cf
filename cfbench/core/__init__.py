"""The small core every layer may use: errors, column names, seeding, files, paths, secrets.

Nothing here imports another part of cfbench.
"""
