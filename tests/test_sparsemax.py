import torch

from vocab_transfer.methods.sparsemax import sparsemax, topk_sparsemax


def test_known_answers():
    # Martins & Astudillo: z=(1, 0.5, -1) -> tau=0.25 -> (0.75, 0.25, 0)
    torch.testing.assert_close(sparsemax(torch.tensor([1.0, 0.5, -1.0])), torch.tensor([0.75, 0.25, 0.0]))
    # ties share the mass; a dominant entry takes all of it
    torch.testing.assert_close(sparsemax(torch.tensor([0.3, 0.3])), torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(sparsemax(torch.tensor([3.0, 0.0, 0.1])), torch.tensor([1.0, 0.0, 0.0]))


def test_is_projection_onto_simplex():
    z = torch.randn(50, 30, generator=torch.Generator().manual_seed(0)) * 3
    p = sparsemax(z)
    torch.testing.assert_close(p.sum(1), torch.ones(50))
    assert (p >= 0).all() and (p == 0).any()
    # p is the closest simplex point: no random simplex point is closer
    q = torch.distributions.Dirichlet(torch.ones(30)).sample((200,))
    assert ((p[:1] - z[:1]) ** 2).sum() <= ((q - z[:1]) ** 2).sum(1).min()


def test_dim_argument():
    z = torch.randn(4, 6)
    torch.testing.assert_close(sparsemax(z, dim=0), sparsemax(z.T, dim=1).T)


def test_topk_matches_full_sparsemax_including_wide_supports():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(64, 500, generator=g)
    z[:8] *= 0.001  # nearly flat rows: support far wider than k, exercises the fallback
    full = sparsemax(z, dim=1)
    w, idx = topk_sparsemax(z, k=16)
    dense = torch.zeros_like(z).scatter_add_(1, idx, w)
    torch.testing.assert_close(dense, full)
