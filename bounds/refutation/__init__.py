"""mdmt.bounds.refutation: the refutation engine of ``mdmt refute`` -- claims over named quantities,
their exact values on an instance, certified verdicts, the families searched, the search itself
and the conjecture catalogue."""
