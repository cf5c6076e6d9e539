"""``Tcp``: the per-Net state of TCP that both IP families share.

Theory of operation: :func:`tcp_init` builds one :class:`Tcp` per Net (kept
in ``net.proto_data["tcp"]``; the IPv4 layer calls it, IPv6 will get the same
object): the ``net.ipv4.tcp_*`` sysctls (in the kernel they are per network
namespace and serve IPv6 too), the SNMP counters, the hash tables of sockets,
the registered congestion-control algorithms and the per-Net secrets the
initial sequence numbers and timestamp offsets are derived from (seeded, so a
run is reproducible). Timer constants are kept in jiffies of the host's HZ.

Kernel: net/ipv4/tcp.c (tcp_init), net/ipv4/tcp_ipv4.c (tcp_sk_init),
net/ipv4/sysctl_net_ipv4.c, net/core/secure_seq.c.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

import trio

from netstack.core.net_generic import NetKey
from netstack.core.sysctl import invalid
from netstack.sites import kernel
from netstack.tcp import input as _input
from netstack.tcp import minisocks as _minisocks
from netstack.tcp import tcp as _tcp
from netstack.tcp import timer as _timer
from netstack.tcp.cong import TcpCongestionOps, TcpReno
from netstack.tcp.cubic import TcpCubic
from netstack.tcp.hashtables import InetHashinfo
from netstack.tcp.mib import TcpExtMib, TcpMib
from netstack.tcp.sock import TcpProt

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.tcp.sock import InetConnectionSockAfOps

__all__ = ["Tcp", "tcp_init", "tcp_of"]

# the TCP clocks' reading at virtual time 0 (see Tcp.tcp_clock_us): five minutes of
# uptime, as long as INITIAL_JIFFIES leaves jiffies before their 32-bit wrap
TCP_CLOCK_BOOT_MS: Final = 300_000
_TCP_CLOCK_BOOT_US: Final = TCP_CLOCK_BOOT_MS * 1000

_INT_SYSCTLS: Final = (
    # name, attribute, min, max
    ("tcp_timestamps", "sysctl_tcp_timestamps", 0, 2),
    ("tcp_window_scaling", "sysctl_tcp_window_scaling", 0, 1),
    ("tcp_sack", "sysctl_tcp_sack", 0, 1),
    ("tcp_dsack", "sysctl_tcp_dsack", 0, 1),
    ("tcp_syn_retries", "sysctl_tcp_syn_retries", 1, 127),
    ("tcp_syn_linear_timeouts", "sysctl_tcp_syn_linear_timeouts", 0, 127),
    ("tcp_synack_retries", "sysctl_tcp_synack_retries", 0, 255),
    ("tcp_retries1", "sysctl_tcp_retries1", 0, 255),
    ("tcp_retries2", "sysctl_tcp_retries2", 0, 255),
    ("tcp_orphan_retries", "sysctl_tcp_orphan_retries", 0, 255),
    ("tcp_fin_timeout", "sysctl_tcp_fin_timeout", 0, None),
    ("tcp_keepalive_time", "sysctl_tcp_keepalive_time", 1, None),
    ("tcp_keepalive_intvl", "sysctl_tcp_keepalive_intvl", 1, None),
    ("tcp_keepalive_probes", "sysctl_tcp_keepalive_probes", 1, 127),
    ("tcp_max_syn_backlog", "sysctl_max_syn_backlog", 0, None),
    ("tcp_syncookies", "sysctl_tcp_syncookies", 0, 2),
    ("tcp_abort_on_overflow", "sysctl_tcp_abort_on_overflow", 0, 1),
    ("tcp_moderate_rcvbuf", "sysctl_tcp_moderate_rcvbuf", 0, 1),
    ("tcp_adv_win_scale", "sysctl_tcp_adv_win_scale", -31, 31),
    ("tcp_app_win", "sysctl_tcp_app_win", 0, 31),
    ("tcp_reordering", "sysctl_tcp_reordering", 1, None),
    ("tcp_max_reordering", "sysctl_tcp_max_reordering", 1, None),
    ("tcp_retrans_collapse", "sysctl_tcp_retrans_collapse", 0, 1),
    ("tcp_slow_start_after_idle", "sysctl_tcp_slow_start_after_idle", 0, 1),
    ("tcp_frto", "sysctl_tcp_frto", 0, 2),
    ("tcp_recovery", "sysctl_tcp_recovery", 0, None),
    ("tcp_early_retrans", "sysctl_tcp_early_retrans", 0, 4),
    ("tcp_tso_win_divisor", "sysctl_tcp_tso_win_divisor", 0, None),
    ("tcp_min_tso_segs", "sysctl_tcp_min_tso_segs", 1, None),
    ("tcp_limit_output_bytes", "sysctl_tcp_limit_output_bytes", 0, None),
    ("tcp_challenge_ack_limit", "sysctl_tcp_challenge_ack_limit", 0, None),
    ("tcp_invalid_ratelimit", "sysctl_tcp_invalid_ratelimit", 0, None),
    ("tcp_rfc1337", "sysctl_tcp_rfc1337", 0, 1),
    ("tcp_tw_reuse", "sysctl_tcp_tw_reuse", 0, 2),
    ("tcp_max_tw_buckets", "sysctl_max_tw_buckets", 0, None),
    ("tcp_mtu_probing", "sysctl_tcp_mtu_probing", 0, 2),
    ("tcp_base_mss", "sysctl_tcp_base_mss", 1, None),
    ("tcp_min_snd_mss", "sysctl_tcp_min_snd_mss", 48, 65535 - 40),
    ("tcp_notsent_lowat", "sysctl_tcp_notsent_lowat", 0, None),
    ("tcp_pacing_ss_ratio", "sysctl_tcp_pacing_ss_ratio", 0, 1000),
    ("tcp_pacing_ca_ratio", "sysctl_tcp_pacing_ca_ratio", 0, 1000),
    ("tcp_thin_linear_timeouts", "sysctl_tcp_thin_linear_timeouts", 0, 1),
    ("tcp_workaround_signed_windows", "sysctl_tcp_workaround_signed_windows", 0, 1),
    ("tcp_stdurg", "sysctl_tcp_stdurg", 0, 1),
    ("tcp_min_rtt_wlen", "sysctl_tcp_min_rtt_wlen", 0, 86400),
    ("tcp_autocorking", "sysctl_tcp_autocorking", 0, 1),
    ("tcp_comp_sack_delay_ns", "sysctl_tcp_comp_sack_delay_ns", 0, None),
    ("tcp_comp_sack_slack_ns", "sysctl_tcp_comp_sack_slack_ns", 0, None),
    ("tcp_comp_sack_nr", "sysctl_tcp_comp_sack_nr", 0, 255),
)


class Tcp:
    """TCP's state in one Net (kernel: the ``net->ipv4.sysctl_tcp_*`` and friends).

    Slotted (83 fields: a 1.6 KB instance dictionary a host otherwise); the
    ``__dict__`` slot keeps an attribute set later or from outside working.
    """

    __slots__ = (
        "TCP_ATO_MIN",
        "TCP_DELACK_MAX",
        "TCP_DELACK_MIN",
        "TCP_RESOURCE_PROBE_INTERVAL",
        "TCP_RTO_MAX",
        "TCP_RTO_MIN",
        "TCP_SYNQ_INTERVAL",
        "TCP_TIMEOUT_INIT",
        "TCP_TIMEOUT_MIN",
        "TCP_TIMEWAIT_LEN",
        "__dict__",
        "_secret",
        "_ts_secret",
        "allowed_congestion_control",
        "challenge_count",
        "challenge_timestamp",
        "congestion_controls",
        "default_congestion_control",
        "ext",
        "hashinfo",
        "hz",
        "mib",
        "net",
        "orphan_count",
        "prot",
        "sockets",
        "sysctl_max_syn_backlog",
        "sysctl_max_tw_buckets",
        "sysctl_tcp_abort_on_overflow",
        "sysctl_tcp_adv_win_scale",
        "sysctl_tcp_app_win",
        "sysctl_tcp_autocorking",
        "sysctl_tcp_base_mss",
        "sysctl_tcp_challenge_ack_limit",
        "sysctl_tcp_comp_sack_delay_ns",
        "sysctl_tcp_comp_sack_nr",
        "sysctl_tcp_comp_sack_slack_ns",
        "sysctl_tcp_dsack",
        "sysctl_tcp_early_retrans",
        "sysctl_tcp_fastopen",
        "sysctl_tcp_fastopen_blackhole_timeout",
        "sysctl_tcp_fin_timeout",
        "sysctl_tcp_frto",
        "sysctl_tcp_invalid_ratelimit",
        "sysctl_tcp_keepalive_intvl",
        "sysctl_tcp_keepalive_probes",
        "sysctl_tcp_keepalive_time",
        "sysctl_tcp_limit_output_bytes",
        "sysctl_tcp_max_reordering",
        "sysctl_tcp_min_rtt_wlen",
        "sysctl_tcp_min_snd_mss",
        "sysctl_tcp_min_tso_segs",
        "sysctl_tcp_moderate_rcvbuf",
        "sysctl_tcp_mtu_probing",
        "sysctl_tcp_notsent_lowat",
        "sysctl_tcp_orphan_retries",
        "sysctl_tcp_pacing_ca_ratio",
        "sysctl_tcp_pacing_ss_ratio",
        "sysctl_tcp_recovery",
        "sysctl_tcp_reordering",
        "sysctl_tcp_retrans_collapse",
        "sysctl_tcp_retries1",
        "sysctl_tcp_retries2",
        "sysctl_tcp_rfc1337",
        "sysctl_tcp_sack",
        "sysctl_tcp_slow_start_after_idle",
        "sysctl_tcp_stdurg",
        "sysctl_tcp_syn_linear_timeouts",
        "sysctl_tcp_syn_retries",
        "sysctl_tcp_synack_retries",
        "sysctl_tcp_syncookies",
        "sysctl_tcp_thin_linear_timeouts",
        "sysctl_tcp_timestamps",
        "sysctl_tcp_tso_win_divisor",
        "sysctl_tcp_tw_reuse",
        "sysctl_tcp_window_scaling",
        "sysctl_tcp_workaround_signed_windows",
        "tcp_fastopen_cache",
        "tcp_fastopen_ctx",
        "tcp_rmem",
        "tcp_wmem",
        "tfo_active_disable_stamp",
        "tfo_active_disable_times",
        "tw_count",
    )

    def __init__(self, net: Net) -> None:
        self.net = net
        hz = net.clock.hz
        self.hz = hz
        # timer constants (include/net/tcp.h), in jiffies
        self.TCP_RTO_MAX = 120 * hz
        self.TCP_RTO_MIN = hz // 5
        self.TCP_TIMEOUT_MIN = 2
        self.TCP_TIMEOUT_INIT = hz
        self.TCP_DELACK_MAX = hz // 5
        self.TCP_DELACK_MIN = max(hz // 25, 1)
        self.TCP_ATO_MIN = max(hz // 25, 1)
        self.TCP_TIMEWAIT_LEN = 60 * hz
        self.TCP_RESOURCE_PROBE_INTERVAL = hz // 2
        self.TCP_SYNQ_INTERVAL = hz // 5
        # sysctls (net/ipv4/tcp_ipv4.c tcp_sk_init, sysctl_net_ipv4.c)
        self.sysctl_tcp_timestamps = 1
        self.sysctl_tcp_window_scaling = 1
        self.sysctl_tcp_sack = 1
        self.sysctl_tcp_dsack = 1
        self.sysctl_tcp_comp_sack_delay_ns = 1_000_000  # NSEC_PER_MSEC
        self.sysctl_tcp_comp_sack_slack_ns = 100_000  # 100 * NSEC_PER_USEC
        self.sysctl_tcp_comp_sack_nr = 44
        self.sysctl_tcp_syn_retries = 6
        self.sysctl_tcp_syn_linear_timeouts = 4  # 6.5+: the first 4 SYN RTOs do not back off
        self.sysctl_tcp_synack_retries = 5
        self.sysctl_tcp_retries1 = 3
        self.sysctl_tcp_retries2 = 15
        self.sysctl_tcp_orphan_retries = 0
        self.sysctl_tcp_fin_timeout = 60
        self.sysctl_tcp_keepalive_time = 7200
        self.sysctl_tcp_keepalive_intvl = 75
        self.sysctl_tcp_keepalive_probes = 9
        self.sysctl_max_syn_backlog = 128
        self.sysctl_tcp_syncookies = 1
        self.sysctl_tcp_abort_on_overflow = 0
        self.sysctl_tcp_moderate_rcvbuf = 1
        self.sysctl_tcp_adv_win_scale = 1
        self.sysctl_tcp_app_win = 31
        self.sysctl_tcp_reordering = 3
        self.sysctl_tcp_max_reordering = 300
        self.sysctl_tcp_retrans_collapse = 1
        self.sysctl_tcp_slow_start_after_idle = 1
        self.sysctl_tcp_frto = 2
        self.sysctl_tcp_recovery = 1  # TCP_RACK_LOSS_DETECTION
        self.sysctl_tcp_early_retrans = 3
        self.sysctl_tcp_tso_win_divisor = 3
        self.sysctl_tcp_min_tso_segs = 2
        self.sysctl_tcp_limit_output_bytes = 1048576
        self.sysctl_tcp_challenge_ack_limit = 1000
        self.sysctl_tcp_invalid_ratelimit = 500  # milliseconds
        self.sysctl_tcp_rfc1337 = 0
        self.sysctl_tcp_tw_reuse = 2
        self.sysctl_max_tw_buckets = 262144
        self.sysctl_tcp_mtu_probing = 0
        self.sysctl_tcp_base_mss = 1024
        self.sysctl_tcp_min_snd_mss = 48
        self.sysctl_tcp_notsent_lowat = 0xFFFFFFFF
        self.sysctl_tcp_pacing_ss_ratio = 200
        self.sysctl_tcp_pacing_ca_ratio = 120
        self.sysctl_tcp_thin_linear_timeouts = 0
        self.sysctl_tcp_workaround_signed_windows = 0
        self.sysctl_tcp_stdurg = 0
        self.sysctl_tcp_min_rtt_wlen = 300
        self.sysctl_tcp_autocorking = 1
        from netstack.tcp.fastopen import TcpFastopenCache  # it needs tcp.sock, which needs us

        self.sysctl_tcp_fastopen = 1  # TFO_CLIENT_ENABLE
        self.sysctl_tcp_fastopen_blackhole_timeout = 0
        self.tcp_fastopen_ctx: list[tuple[int, int]] | None = None  # net->ipv4.tcp_fastopen_ctx
        self.tcp_fastopen_cache = TcpFastopenCache()  # tcp_metrics' Fast Open part
        self.tfo_active_disable_times = 0
        self.tfo_active_disable_stamp = 0
        self.tcp_rmem = (4096, 131072, 33554432)  # 6.18: tcp_rmem[2] is 32 MB
        self.tcp_wmem = (4096, 16384, 4194304)
        # state
        self.mib = TcpMib()
        self.ext = TcpExtMib()
        self.hashinfo = InetHashinfo(self)
        self.prot = TCP_PROT  # what its sockets' sk_prot points at
        self.congestion_controls: dict[str, TcpCongestionOps] = {}
        self.default_congestion_control = "cubic"
        self.allowed_congestion_control: list[str] = []
        self.challenge_timestamp = -1  # jiffies start at 0 here, not at INITIAL_JIFFIES
        self.challenge_count = 0
        self.tw_count = 0
        self.orphan_count = 0
        self.sockets: set[Any] = set()  # every TCP socket of the Net, for ss
        self._secret = net.rng.getrandbits(128).to_bytes(16, "big")
        self._ts_secret = net.rng.getrandbits(128).to_bytes(16, "big")
        self.tcp_register_congestion_control(TcpReno())
        self.tcp_register_congestion_control(TcpCubic())
        self.allowed_congestion_control = ["reno", "cubic"]

    # -- congestion control registry (net/ipv4/tcp_cong.c) -----------------------------
    @kernel("net/ipv4/tcp_cong.c", "tcp_register_congestion_control")
    def tcp_register_congestion_control(self, ca: TcpCongestionOps) -> None:
        """Make an algorithm available on this Net.

        Kernel: net/ipv4/tcp_cong.c, tcp_register_congestion_control().
        """
        if ca.name in self.congestion_controls:
            raise ValueError(f"{ca.name} already registered")
        self.congestion_controls[ca.name] = ca

    @kernel("tcp_assign_congestion_control")
    def default_ca(self) -> TcpCongestionOps:
        """The algorithm new sockets get. Kernel: tcp_assign_congestion_control()."""
        ca = self.congestion_controls.get(self.default_congestion_control)
        return ca if ca is not None else self.congestion_controls["reno"]

    # -- clocks ------------------------------------------------------------------------
    # The kernel's TCP clocks (tcp_clock_ns(): ktime_get_ns(), CLOCK_MONOTONIC) count
    # from boot, so they never read 0 when a socket exists, and code that keeps a
    # stamp takes 0 for "none" (retrans_stamp, rto_stamp). netstack's read as if the
    # host had booted TCP_CLOCK_BOOT_MS before virtual time 0; timestamp offsets
    # subtract it again (secure_tcp_ts_off), so TSvals on the wire do not move.
    def tcp_clock_us(self) -> int:
        """Microseconds since "boot" (``tcp_clock_us``)."""
        return int(self.net.clock.now() * 1_000_000) + _TCP_CLOCK_BOOT_US

    def tcp_time_stamp_ms(self) -> int:
        """The timestamp-option clock, milliseconds since "boot" (``tcp_time_stamp_ms``)."""
        return (int(self.net.clock.now() * 1000) + TCP_CLOCK_BOOT_MS) & 0xFFFFFFFF

    def jiffies(self) -> int:
        return self.net.clock.jiffies

    @kernel("usecs_to_jiffies")
    def usecs_to_jiffies(self, us: int) -> int:
        """Round up. Kernel: usecs_to_jiffies()."""
        return -(-us * self.hz // 1_000_000)

    def jiffies_to_usecs(self, j: int) -> int:
        return j * 1_000_000 // self.hz

    def msecs_to_jiffies(self, ms: int) -> int:
        return -(-ms * self.hz // 1000)

    def seconds(self) -> int:
        """``ktime_get_seconds()``."""
        return int(self.net.clock.now())

    # -- secrets (net/core/secure_seq.c) -------------------------------------------------
    @kernel("net/core/secure_seq.c", "secure_tcp_seq")
    def secure_tcp_seq(self, saddr: int, daddr: int, sport: int, dport: int) -> int:
        """An initial sequence number: a keyed hash of the 4-tuple plus a clock.

        Kernel: net/core/secure_seq.c, secure_tcp_seq() (siphash + ktime >> 6).
        """
        h = hashlib.blake2b(
            f"{saddr}/{daddr}/{sport}/{dport}".encode(), key=self._secret, digest_size=4
        ).digest()
        ns = int(trio.current_time() * 1e9)
        return (int.from_bytes(h, "big") + (ns >> 6)) & 0xFFFFFFFF

    @kernel("secure_tcp_ts_off")
    def secure_tcp_ts_off(self, saddr: int, daddr: int) -> int:
        """The per-pair timestamp offset. Kernel: secure_tcp_ts_off()."""
        if self.sysctl_tcp_timestamps != 1:
            return 0
        h = hashlib.blake2b(f"{saddr}/{daddr}".encode(), key=self._ts_secret, digest_size=4)
        # less the clock's boot offset: TSval = tcp_time_stamp_ms() + tsoffset as before it
        return (int.from_bytes(h.digest(), "big") - TCP_CLOCK_BOOT_MS) & 0xFFFFFFFF

    def default_ttl(self) -> int:
        ipv4 = self.net.ipv4
        return ipv4.ip_default_ttl if ipv4 is not None else 64

    def local_port_range(self) -> tuple[int, int]:
        ipv4 = self.net.ipv4
        return ipv4.ip_local_port_range if ipv4 is not None else (32768, 60999)

    # -- statistics ---------------------------------------------------------------------
    def snmp(self) -> dict[str, Any]:
        """``Tcp:`` and ``TcpExt:`` snapshots (CurrEstab counted live)."""
        return {"Tcp": self.mib.snapshot(), "TcpExt": self.ext.snapshot()}

    # -- sysctls ------------------------------------------------------------------------
    def register_sysctls(self) -> None:
        s = self.net.sysctl
        for name, attr, lo, hi in _INT_SYSCTLS:
            s.register_int(f"net.ipv4.{name}", self, attr, minimum=lo, maximum=hi)

        def triple(attr: str, name: str) -> None:
            def get() -> str:
                return "\t".join(str(v) for v in getattr(self, attr))

            def set_(text: str) -> None:
                parts = text.split()
                if len(parts) != 3 or not all(p.isdigit() for p in parts):
                    raise invalid(name)
                a, b, c = (int(p) for p in parts)
                if a < 1 or b < 1 or c < 1:
                    raise invalid(name)
                setattr(self, attr, (a, b, c))

            s.register(name, get, set_)

        from netstack.tcp.fastopen import tcp_fastopen_register_sysctls

        tcp_fastopen_register_sysctls(self)
        triple("tcp_rmem", "net.ipv4.tcp_rmem")
        triple("tcp_wmem", "net.ipv4.tcp_wmem")

        def get_cc() -> str:
            return self.default_congestion_control

        def set_cc(text: str) -> None:
            text = text.strip()
            if text not in self.congestion_controls:
                from netstack.errors import ConfigError

                raise ConfigError(
                    'sysctl: setting key "net.ipv4.tcp_congestion_control": No such file or '
                    "directory",
                    2,
                )
            self.default_congestion_control = text
            if text not in self.allowed_congestion_control:
                self.allowed_congestion_control.append(text)

        s.register("net.ipv4.tcp_congestion_control", get_cc, set_cc)
        s.register(
            "net.ipv4.tcp_available_congestion_control",
            lambda: " ".join(self.congestion_controls),
        )

        def set_allowed(text: str) -> None:
            names = text.split()
            if any(n not in self.congestion_controls for n in names):
                raise invalid("net.ipv4.tcp_allowed_congestion_control")
            self.allowed_congestion_control = names

        s.register(
            "net.ipv4.tcp_allowed_congestion_control",
            lambda: " ".join(self.allowed_congestion_control),
            set_allowed,
        )


TCP_NET: NetKey[Tcp] = NetKey("tcp")
# IPv4's af_ops (kernel: ipv4_specific), which IPv6's ipv4_mapped sockets borrow
# struct proto tcp_prot (net/ipv4/tcp_ipv4.c): one immutable table, shared by every Net
TCP_PROT: Final = TcpProt(
    connect=_tcp.inet_stream_connect,
    disconnect=_tcp.tcp_disconnect,
    listen=_tcp.inet_listen,
    accept=_tcp.inet_csk_accept,
    sendmsg=_tcp.tcp_sendmsg,
    recvmsg=_tcp.tcp_recvmsg,
    shutdown=_tcp.inet_shutdown,
    close=_tcp.tcp_close,
    readable=_tcp.tcp_readable,
    writable=_tcp.tcp_writable,
    setsockopt=_tcp.tcp_setsockopt,
    getsockopt=_tcp.tcp_getsockopt,
    write_timer=_timer.tcp_write_timer,
    delack_timer=_timer.tcp_delack_timer,
    keepalive_timer=_timer.tcp_keepalive_timer,
    tw_timer=_minisocks.tw_timer_handler,
    rcv_state_process=_input.tcp_rcv_state_process,
)

TCP_IPV4_AF_OPS: NetKey[InetConnectionSockAfOps] = NetKey("tcp_ipv4")


@kernel("net/ipv4/tcp_ipv4.c", "tcp_sk_init")
def tcp_init(net: Net) -> Tcp:
    """TCP's per-Net state, created on first use (both families share it).

    Kernel: net/ipv4/tcp_ipv4.c, tcp_sk_init().
    """
    tcp = TCP_NET.find(net)
    if tcp is not None:
        return tcp
    tcp = TCP_NET.set(net, Tcp(net))
    # its ~80 entries when a net.ipv4.tcp_* name is first used: most labs never read one
    net.sysctl.register_lazy("net.ipv4.tcp_", tcp.register_sysctls)
    return tcp


def tcp_of(net: Net) -> Tcp:
    """The Net's TCP state (raises if TCP is not installed)."""
    tcp = TCP_NET.find(net)
    if tcp is None:
        raise RuntimeError(f"TCP is not installed on {net.name}")
    return tcp
