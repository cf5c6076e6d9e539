"""802.1D spanning-tree BPDUs and their LLC header: layouts and constants.

A configuration BPDU is 35 bytes: protocol id (0), version (0), type (0),
flags (0x01 topology change, 0x80 topology change acknowledgment), root id
(8), root path cost (4), bridge id (8), port id (2), message age, max age,
hello time, forward delay (2 each, in 1/256 s). A TCN BPDU is the first four
bytes with type 0x80. Both follow an LLC header DSAP = SSAP = 0x42, control
0x03 (UI), in an 802.3 (length) frame to ``01:80:c2:00:00:00``.

Kernel: net/bridge/br_stp_bpdu.c, include/net/llc_pdu.h. Standard: IEEE 802.1D-1998 §9.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = [
    "BPDU_TYPE_CONFIG",
    "BPDU_TYPE_TCN",
    "CONFIG_BPDU",
    "LLC_SAP_BSPAN",
    "LLC_UI",
    "STP_GROUP_ADDR",
    "STP_HZ",
]

BPDU_TYPE_CONFIG: Final = 0x00
BPDU_TYPE_TCN: Final = 0x80
LLC_SAP_BSPAN: Final = 0x42
LLC_UI: Final = 0x03
STP_HZ: Final = 256
STP_GROUP_ADDR: Final = b"\x01\x80\xc2\x00\x00\x00"
# protocol id, version, type, flags, root id, root path cost, bridge id, port id,
# message age, max age, hello time, forward delay
CONFIG_BPDU: Final = struct.Struct("!HBBB8sI8sHHHHH")
