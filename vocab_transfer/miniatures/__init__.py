"""Miniatures of a config's hub resources, written as a hub mirror (vocab_transfer.mirror): the rehearsal
(scripts/rehearse.sh) runs the papers' DAGs offline on them. :mod:`.build` writes models, corpora, word
vectors and dictionaries, :mod:`.tasks` task datasets, :mod:`.text` the text of every language."""
