"""The seeds' kernel changes as switches: :class:`Patches`.

Each field names one change from the five netdev messages in the project's
seeds. ``True`` (the default) is the kernel *after* the change — a modern
kernel; ``False`` gives the behaviour *before* it, for experiments and tests::

    lab.add_host("a", patches=netstack.Patches(neigh_confirm_elide=False))
    Patches.before("gre_lltx", "gre_lltx_ioctl")   # both GRE changes reverted
    Patches.none()                                 # every change reverted

- ``gre_lltx`` (seed 1): GRE devices without output sequencing get
  ``NETIF_F_LLTX`` in newlink / before: GRE always takes ``HARD_TX_LOCK``.
- ``gre_lltx_ioctl`` (seed 3): the ``ip tunnel add`` (ioctl) path sets LLTX
  too / before: only ``ip link add`` does.
- ``neigh_confirm_elide`` (seed 2): ``n->confirmed`` is written only when
  jiffies changed / before: written on every confirmation.
- ``hh_fast_copy`` (seed 2): ``neigh_hh_output`` copies a fixed 16 bytes when
  ``hh_len <= 16`` / before: an aligned copy of ``HH_DATA_ALIGN(hh_len)``.
- ``ipip_sit_gro`` (seed 4): IPIP and SIT have GRO callbacks and IPv6 clears
  ``flush_id`` / before: tunnelled flows are not coalesced.
- ``qdisc_bulk_dequeue`` (seed 5, context): several skbs per root-lock hold,
  bounded by the BQL byte budget / before: one skb per hold.
- ``qdisc_validate_unlocked`` (seed 5): ``validate_xmit_skb_list`` runs after
  the qdisc root lock is released / before: with the root lock held.
"""

from __future__ import annotations

import attrs

__all__ = ["Patches"]


@attrs.frozen(kw_only=True)
class Patches:
    """Which of the seeds' kernel changes are applied (all, by default)."""

    gre_lltx: bool = True
    gre_lltx_ioctl: bool = True
    neigh_confirm_elide: bool = True
    hh_fast_copy: bool = True
    ipip_sit_gro: bool = True
    qdisc_bulk_dequeue: bool = True
    qdisc_validate_unlocked: bool = True

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The patch names, in table order."""
        return tuple(f.name for f in attrs.fields(cls))

    @classmethod
    def all(cls) -> Patches:
        """Every change applied (a modern kernel)."""
        return cls()

    @classmethod
    def none(cls) -> Patches:
        """Every change reverted."""
        return cls(**dict.fromkeys(cls.names(), False))

    @classmethod
    def before(cls, *names: str) -> Patches:
        """Every change applied except *names*.

        Raises:
            ValueError: a name is not a patch.
        """
        unknown = [n for n in names if n not in cls.names()]
        if unknown:
            raise ValueError(f"unknown patch {unknown[0]!r}; patches are: {', '.join(cls.names())}")
        return cls(**dict.fromkeys(names, False))

    def evolve(self, **changes: bool) -> Patches:
        """A copy with some switches changed."""
        return attrs.evolve(self, **changes)

    def applied(self) -> tuple[str, ...]:
        """Names of the applied changes."""
        return tuple(n for n in self.names() if getattr(self, n))
