"""Figures from result dicts, in one style; no JAX."""
