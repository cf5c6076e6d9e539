"""TCP's SNMP counters: ``Tcp:`` of /proc/net/snmp and TCP's part of ``TcpExt:``.

Theory of operation: slotted counter objects written on the data path
(``tcp.mib.InSegs += 1``); ``snapshot()`` freezes them for ``nstat`` /
``netstat -s`` style views. Names are the kernel's (``TCP_MIB_*`` and the
``LINUX_MIB_*`` strings of net/ipv4/proc.c).

Kernel: include/uapi/linux/snmp.h, net/ipv4/proc.c (snmp4_tcp_list, snmp4_net_list).
"""

from __future__ import annotations

from typing import Final

from netstack.core.snmp import Mib

__all__ = ["TCPEXT_FIELDS", "TCP_FIELDS", "TcpExtMib", "TcpMib"]

TCP_FIELDS: Final = (
    "RtoAlgorithm",
    "RtoMin",
    "RtoMax",
    "MaxConn",
    "ActiveOpens",
    "PassiveOpens",
    "AttemptFails",
    "EstabResets",
    "CurrEstab",
    "InSegs",
    "OutSegs",
    "RetransSegs",
    "InErrs",
    "OutRsts",
    "InCsumErrors",
)

TCPEXT_FIELDS: Final = (
    "SyncookiesSent",
    "SyncookiesRecv",
    "SyncookiesFailed",
    "EmbryonicRsts",
    "PruneCalled",
    "RcvPruned",
    "OfoPruned",
    "OutOfWindowIcmps",
    "LockDroppedIcmps",
    "TW",
    "TWRecycled",
    "TWKilled",
    "PAWSActive",
    "PAWSEstab",
    "DelayedACKs",
    "DelayedACKLocked",
    "DelayedACKLost",
    "ListenOverflows",
    "ListenDrops",
    "TCPHPHits",
    "TCPPureAcks",
    "TCPHPAcks",
    "TCPRenoRecovery",
    "TCPSackRecovery",
    "TCPSACKReneging",
    "TCPSACKReorder",
    "TCPRenoReorder",
    "TCPTSReorder",
    "TCPFullUndo",
    "TCPPartialUndo",
    "TCPDSACKUndo",
    "TCPLossUndo",
    "TCPLostRetransmit",
    "TCPRenoFailures",
    "TCPSackFailures",
    "TCPLossFailures",
    "TCPFastRetrans",
    "TCPSlowStartRetrans",
    "TCPTimeouts",
    "TCPLossProbes",
    "TCPLossProbeRecovery",
    "TCPRenoRecoveryFail",
    "TCPSackRecoveryFail",
    "TCPRcvCollapsed",
    "TCPDSACKOldSent",
    "TCPDSACKOfoSent",
    "TCPDSACKRecv",
    "TCPDSACKOfoRecv",
    "TCPAbortOnData",
    "TCPAbortOnClose",
    "TCPAbortOnMemory",
    "TCPAbortOnTimeout",
    "TCPAbortOnLinger",
    "TCPAbortFailed",
    "TCPMemoryPressures",
    "TCPSACKDiscard",
    "TCPDSACKIgnoredOld",
    "TCPDSACKIgnoredNoUndo",
    "TCPSpuriousRTOs",
    "TCPSackShifted",
    "TCPSackMerged",
    "TCPSackShiftFallback",
    "TCPBacklogDrop",
    "PFMemallocDrop",
    "TCPMinTTLDrop",
    "TCPDeferAcceptDrop",
    "IPReversePathFilter",
    "TCPTimeWaitOverflow",
    "TCPReqQFullDoCookies",
    "TCPReqQFullDrop",
    "TCPRetransFail",
    "TCPRcvCoalesce",
    "TCPOFOQueue",
    "TCPOFODrop",
    "TCPOFOMerge",
    "TCPChallengeACK",
    "TCPSYNChallenge",
    "TCPFastOpenActive",
    "TCPFastOpenActiveFail",
    "TCPFastOpenPassive",
    "TCPFastOpenPassiveFail",
    "TCPFastOpenListenOverflow",
    "TCPFastOpenCookieReqd",
    "TCPFastOpenBlackhole",
    "TCPSpuriousRtxHostQueues",
    "TCPAutoCorking",
    "TCPFromZeroWindowAdv",
    "TCPToZeroWindowAdv",
    "TCPWantZeroWindowAdv",
    "TCPSynRetrans",
    "TCPOrigDataSent",
    "TCPHystartTrainDetect",
    "TCPHystartTrainCwnd",
    "TCPHystartDelayDetect",
    "TCPHystartDelayCwnd",
    "TCPACKSkippedSynRecv",
    "TCPACKSkippedPAWS",
    "TCPACKSkippedSeq",
    "TCPACKSkippedFinWait2",
    "TCPACKSkippedTimeWait",
    "TCPACKSkippedChallenge",
    "TCPWinProbe",
    "TCPKeepAlive",
    "TCPDelivered",
    "TCPAckCompressed",
    "TCPZeroWindowDrop",
    "TCPRcvQDrop",
    "TCPWqueueTooBig",
    "TcpTimeoutRehash",
    "TCPDSACKRecvSegs",
    "TCPDSACKIgnoredDubious",
    "TCPFastOpenPassiveAltKey",
    "BeyondWindow",
)


class TcpMib(Mib):
    """The ``Tcp:`` lines of /proc/net/snmp (``TCP_MIB_*``)."""

    __slots__ = TCP_FIELDS
    FIELDS = TCP_FIELDS
    NAME = "Tcp"
    RtoAlgorithm: int
    RtoMin: int
    RtoMax: int
    MaxConn: int
    ActiveOpens: int
    PassiveOpens: int
    AttemptFails: int
    EstabResets: int
    CurrEstab: int
    InSegs: int
    OutSegs: int
    RetransSegs: int
    InErrs: int
    OutRsts: int
    InCsumErrors: int

    def __init__(self) -> None:
        super().__init__()
        self.RtoAlgorithm = 1
        self.RtoMin = 200
        self.RtoMax = 120000
        self.MaxConn = -1


class TcpExtMib(Mib):
    """TCP's counters of the ``TcpExt:`` lines of /proc/net/netstat (``LINUX_MIB_*``)."""

    __slots__ = TCPEXT_FIELDS
    FIELDS = TCPEXT_FIELDS
    NAME = "TcpExt"
    SyncookiesSent: int
    SyncookiesRecv: int
    SyncookiesFailed: int
    EmbryonicRsts: int
    PruneCalled: int
    RcvPruned: int
    OfoPruned: int
    OutOfWindowIcmps: int
    LockDroppedIcmps: int
    TW: int
    TWRecycled: int
    TWKilled: int
    PAWSActive: int
    PAWSEstab: int
    DelayedACKs: int
    DelayedACKLocked: int
    DelayedACKLost: int
    ListenOverflows: int
    ListenDrops: int
    TCPHPHits: int
    TCPPureAcks: int
    TCPHPAcks: int
    TCPRenoRecovery: int
    TCPSackRecovery: int
    TCPSACKReneging: int
    TCPSACKReorder: int
    TCPRenoReorder: int
    TCPTSReorder: int
    TCPFullUndo: int
    TCPPartialUndo: int
    TCPDSACKUndo: int
    TCPLossUndo: int
    TCPLostRetransmit: int
    TCPRenoFailures: int
    TCPSackFailures: int
    TCPLossFailures: int
    TCPFastRetrans: int
    TCPSlowStartRetrans: int
    TCPTimeouts: int
    TCPLossProbes: int
    TCPLossProbeRecovery: int
    TCPRenoRecoveryFail: int
    TCPSackRecoveryFail: int
    TCPRcvCollapsed: int
    TCPDSACKOldSent: int
    TCPDSACKOfoSent: int
    TCPDSACKRecv: int
    TCPDSACKOfoRecv: int
    TCPAbortOnData: int
    TCPAbortOnClose: int
    TCPAbortOnMemory: int
    TCPAbortOnTimeout: int
    TCPAbortOnLinger: int
    TCPAbortFailed: int
    TCPMemoryPressures: int
    TCPSACKDiscard: int
    TCPDSACKIgnoredOld: int
    TCPDSACKIgnoredNoUndo: int
    TCPSpuriousRTOs: int
    TCPSackShifted: int
    TCPSackMerged: int
    TCPSackShiftFallback: int
    TCPBacklogDrop: int
    PFMemallocDrop: int
    TCPMinTTLDrop: int
    TCPDeferAcceptDrop: int
    IPReversePathFilter: int
    TCPTimeWaitOverflow: int
    TCPReqQFullDoCookies: int
    TCPReqQFullDrop: int
    TCPRetransFail: int
    TCPRcvCoalesce: int
    TCPOFOQueue: int
    TCPOFODrop: int
    TCPOFOMerge: int
    TCPChallengeACK: int
    TCPSYNChallenge: int
    TCPFastOpenActive: int
    TCPFastOpenActiveFail: int
    TCPFastOpenPassive: int
    TCPFastOpenPassiveFail: int
    TCPFastOpenListenOverflow: int
    TCPFastOpenCookieReqd: int
    TCPFastOpenBlackhole: int
    TCPSpuriousRtxHostQueues: int
    TCPAutoCorking: int
    TCPFromZeroWindowAdv: int
    TCPToZeroWindowAdv: int
    TCPWantZeroWindowAdv: int
    TCPSynRetrans: int
    TCPOrigDataSent: int
    TCPHystartTrainDetect: int
    TCPHystartTrainCwnd: int
    TCPHystartDelayDetect: int
    TCPHystartDelayCwnd: int
    TCPACKSkippedSynRecv: int
    TCPACKSkippedPAWS: int
    TCPACKSkippedSeq: int
    TCPACKSkippedFinWait2: int
    TCPACKSkippedTimeWait: int
    TCPACKSkippedChallenge: int
    TCPWinProbe: int
    TCPKeepAlive: int
    TCPDelivered: int
    TCPAckCompressed: int
    TCPZeroWindowDrop: int
    TCPRcvQDrop: int
    TCPWqueueTooBig: int
    TcpTimeoutRehash: int
    TCPDSACKRecvSegs: int
    TCPDSACKIgnoredDubious: int
    TCPFastOpenPassiveAltKey: int
    BeyondWindow: int
