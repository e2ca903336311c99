"""What tests and benches share: fakes of the services we cannot run here (speaking their wire protocols),
real `ombre serve` processes, the transcript generator, the rewrite invariants checked apart from ombre's
own verifier, and the distillation set's scorer."""
