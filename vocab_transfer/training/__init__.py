"""Trainers and what they share: :mod:`.runtime` (device, precision, optimizer and schedule, atomic
checkpoints and bit-identical resume, SIGUSR1/SIGTERM -> checkpoint -> exit 75, progress logs) and their typed
settings (:mod:`.settings`, loaded without torch); :mod:`.lapt` (language-adaptive pretraining),
:mod:`.finetune` (downstream tasks), :mod:`.zeroshot` (MAD-X cross-lingual transfer), :mod:`.pretrain` (the
demo's source model); and the model parts they train: :mod:`.adapters` (MAD-X adapters), :mod:`.factorized`
(UNKs Everywhere's factorized embeddings)."""
