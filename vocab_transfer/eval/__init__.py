"""Evaluation of a transferred model before training: masking, packing and the init-time MLM/CLM loss
(:mod:`.mlm`)."""
