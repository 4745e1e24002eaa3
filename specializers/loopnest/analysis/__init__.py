"""Dependence analysis: binding run-time values, the classical dependence tests, and the
dependence graph (static part computed once per nest, the rest once per binding)."""
