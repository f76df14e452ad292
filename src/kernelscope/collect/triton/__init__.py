"""Triton: Proton-style launch metrics (``launches``) and the interpreter memory inspector (``intercept``).

Everything here imports Triton lazily: the package itself imports without Triton installed.
"""
