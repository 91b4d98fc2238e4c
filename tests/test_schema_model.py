"""The enums of the config model that name what another module implements are that module's: the provenance
labels a figure counts as matched are those the methods write, and the adapters' non-linearities those the
adapter module builds (the other enums of the model are the very tuples the code dispatches on)."""

import typing

from vocab_transfer.methods import base
from vocab_transfer.training import adapters, settings
from vocab_transfer.workflow import figure_kinds


def test_provenance_labels_are_the_methods_labels():
    labels = (base.SPECIAL, base.COPIED, base.COMBINED, base.MAPPED, base.RANDOM)
    assert typing.get_args(figure_kinds.Provenance) == labels


def test_adapter_non_linearities_are_the_ones_built():
    assert set(settings.NON_LINEARITIES) == set(adapters.ACTIVATIONS)
    field = settings.AdapterConfig.model_fields["non_linearity"]
    assert typing.get_args(field.annotation) == settings.NON_LINEARITIES
