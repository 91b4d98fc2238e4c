"""Evaluation of transferred models: masking, packing and the init-time MLM/CLM loss (:mod:`.mlm`); the
embedding correlation of vocab-swap §3 (:mod:`.correlation`)."""
