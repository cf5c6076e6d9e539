"""``ss``: the TCP sockets of a host, as iproute2's ``ss -t [-a|-l] [-i] [-n] [-4|-6]`` prints them.

Theory of operation: the sockets come from TCP's hash tables (listeners,
connections, request and TIME_WAIT socks); the queue columns follow ss's
rules (a listener shows its accept queue and backlog, a connection the bytes
not yet read and not yet acknowledged); ``-i`` adds the second line of
``tcp_info`` fields in ss's order and spelling (misc/ss.c, tcp_show_info).
Addresses are always numeric (``-n`` is accepted and implied); IPv6 ones
are bracketed, ``[2001:db8::1]:80``, as ss prints them; the wildcard of a
dual-stack socket (IPV6_V6ONLY off) is ``*``, ``*:80``, of a v6-only one
``[::]:80``. An AF_INET6 socket
talking IPv4 (dual stack) shows ``[::ffff:10.0.0.1]:80`` and, as with the
real ss (whose ``-4``/``-6`` ask inet_diag for one ``sk_family``), is listed
by ``-6`` and not by ``-4``.

UDP (``ss -u [-a|-l]``): the IPv4 UDP sockets, ``UNCONN`` or ``ESTAB``, with
the bytes in the receive and send buffers as the queues. :func:`main` is the
command: ss's options (short, bundled, and the long ``--tcp``… forms), its
usage on ``-h`` and its messages and exit status 255 for bad ones.

Kernel/iproute2: misc/ss.c (tcp_show, tcp_show_info, udp_show), net/ipv4/tcp_diag.c.
"""

from __future__ import annotations

import errno
import shlex
from typing import TYPE_CHECKING, Any, Final

from netstack.errors import ConfigError
from netstack.ipv4 import ipv4_of
from netstack.tcp import TcpSock, tcp_get_info, tcp_of
from netstack.tcp.sock import TCP_LISTEN, RequestSock, TimewaitSock
from netstack.wire.ipv4 import ntoa
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["SS_USAGE", "main", "ss"]

M32 = 0xFFFFFFFF
AF_INET = 2
AF_INET6 = 10
V4MAPPED_PREFIX = 0xFFFF << 32


def _fmt_rate(bps: float) -> str:
    """ss's sprint_bw(): bps, Kbps, Mbps, Gbps with one decimal."""
    if bps > 1e9:
        return f"{bps / 1e9:.1f}Gbps"
    if bps > 1e6:
        return f"{bps / 1e6:.1f}Mbps"
    if bps > 1e3:
        return f"{bps / 1e3:.1f}Kbps"
    return f"{bps:.0f}bps"


def _info_line(sk: TcpSock) -> str:
    """The ``-i`` line, in tcp_show_info()'s order."""
    i = tcp_get_info(sk)
    out: list[str] = []
    out.extend(o for o in i.options if o in ("ts", "sack"))
    out.append(i.cong)
    out.extend(o for o in i.options if o.startswith("wscale"))
    if i.rto_ms:
        out.append(f"rto:{i.rto_ms:g}")
    if i.backoff:
        out.append(f"backoff:{i.backoff}")
    if i.rtt_ms:
        out.append(f"rtt:{i.rtt_ms:g}/{i.rttvar_ms:g}")
    if i.ato_ms:
        out.append(f"ato:{i.ato_ms:g}")
    out.append(f"mss:{i.snd_mss}")
    out.append(f"pmtu:{i.pmtu}")
    out.append(f"rcvmss:{i.rcv_mss}")
    out.append(f"advmss:{i.advmss}")
    out.append(f"cwnd:{i.snd_cwnd}")
    if i.snd_ssthresh < 0xFFFF:
        out.append(f"ssthresh:{i.snd_ssthresh}")
    if i.bytes_sent:
        out.append(f"bytes_sent:{i.bytes_sent}")
    if i.bytes_retrans:
        out.append(f"bytes_retrans:{i.bytes_retrans}")
    if i.bytes_acked:
        out.append(f"bytes_acked:{i.bytes_acked}")
    if i.bytes_received:
        out.append(f"bytes_received:{i.bytes_received}")
    out.append(f"segs_out:{i.segs_out}")
    out.append(f"segs_in:{i.segs_in}")
    if i.data_segs_out:
        out.append(f"data_segs_out:{i.data_segs_out}")
    if i.data_segs_in:
        out.append(f"data_segs_in:{i.data_segs_in}")
    if i.rtt_ms:
        out.append("send " + _fmt_rate(i.snd_cwnd * i.snd_mss * 8 * 1000 / i.rtt_ms))
    if i.delivered:
        out.append(f"delivered:{i.delivered}")
    if i.unacked:
        out.append(f"unacked:{i.unacked}")
    if i.retrans or i.total_retrans:
        out.append(f"retrans:{i.retrans}/{i.total_retrans}")
    if i.lost:
        out.append(f"lost:{i.lost}")
    if i.sacked:
        out.append(f"sacked:{i.sacked}")
    out.append(f"rcv_space:{i.rcv_space}")
    out.append(f"rcv_ssthresh:{i.rcv_ssthresh}")
    if i.min_rtt_ms:
        out.append(f"minrtt:{i.min_rtt_ms:g}")
    if i.ca_state != "open":
        out.append(f"ca_state:{i.ca_state}")
    return "\t " + " ".join(out)


def _addr(family: int, addr: int, port: int | str, v6only: bool = True) -> str:
    """ss's address column: ``10.0.0.1:80``, ``[2001:db8::1]:80``, and ``*:80`` for
    the wildcard of a dual-stack AF_INET6 socket (IPV6_V6ONLY off: inet_diag's
    INET_DIAG_SKV6ONLY), which takes IPv4 too (misc/ss.c, inet_addr_print)."""
    if family == AF_INET6:
        if not addr and not v6only:
            return f"*:{port}"
        return f"[{ntoa6(addr)}]:{port}"
    return f"{ntoa(addr)}:{port}"


def _v6view(sk: Any, wire_family: int, addr: int) -> int:
    """An AF_INET6 socket talking IPv4 (dual stack) shows ``::ffff:a.b.c.d``, as the
    kernel's inet_diag fills ``sk_v6_rcv_saddr``/``sk_v6_daddr`` (inet_diag_msg_common_fill)."""
    if sk.family == AF_INET6 and wire_family == AF_INET and addr:
        return V4MAPPED_PREFIX | addr
    return addr


def _row(sk: Any) -> tuple[str, int, int, str, str]:
    fam = sk.family
    if isinstance(sk, TimewaitSock):
        wf = sk.af_ops.family
        local = _addr(fam, _v6view(sk, wf, sk.rcv_saddr), sk.num)
        peer = _addr(fam, _v6view(sk, wf, sk.daddr), sk.dport)
        return (sk.state_name, 0, 0, local, peer)
    if isinstance(sk, RequestSock):
        wf = sk.af_specific.family
        local = _addr(fam, _v6view(sk, wf, sk.loc_addr), sk.num)
        return ("SYN-RECV", 0, 0, local, _addr(fam, _v6view(sk, wf, sk.rmt_addr), sk.rmt_port))
    v6only = bool(getattr(sk, "ipv6only", True))
    if sk.state == TCP_LISTEN:
        local = _addr(fam, sk.inet_rcv_saddr, sk.inet_num, v6only)
        peer = _addr(fam, 0, "*", v6only)
        return ("LISTEN", len(sk.accept_queue), sk.sk_max_ack_backlog, local, peer)
    recvq = (sk.rcv_nxt - sk.copied_seq) & M32
    sendq = (sk.write_seq - sk.snd_una) & M32
    local = _addr(fam, sk.user_addr(sk.inet_saddr), sk.inet_num)
    peer = _addr(fam, sk.user_addr(sk.inet_daddr), sk.inet_dport)
    return (sk.state_name, recvq, sendq, local, peer)


def ss(net: Net, command: str = "-t") -> str:
    """Run ``ss`` with *command*'s options; return what it prints."""
    args = command.split()
    show_info = listening = all_ = False
    families = set()
    for arg in args:
        if not arg.startswith("-") or arg == "-":
            raise ConfigError(f'ss: unknown argument "{arg}"', errno.EINVAL)
        for ch in arg[1:]:
            if ch == "i":
                show_info = True
            elif ch == "l":
                listening = True
            elif ch == "a":
                all_ = True
            elif ch == "4":
                families.add(AF_INET)
            elif ch == "6":
                families.add(AF_INET6)
            elif ch in "tne":
                pass
            else:
                raise ConfigError(f"ss: invalid option -- '{ch}'", errno.EINVAL)
    tcp = tcp_of(net)
    rows: list[tuple[tuple[str, int, int, str, str], str | None]] = []
    for sk in tcp.hashinfo.sockets():
        is_listen = isinstance(sk, TcpSock) and sk.state == TCP_LISTEN
        if listening and not is_listen:
            continue
        if families and sk.family not in families:
            continue
        if not listening and not all_ and is_listen:
            continue
        extra = _info_line(sk) if show_info and isinstance(sk, TcpSock) else None
        rows.append((_row(sk), extra))
    header = ("State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port")
    table = [header] + [tuple(str(x) for x in r) for r, _ in rows]
    widths = [max(len(t[k]) for t in table) for k in range(5)]
    lines = []
    for n, t in enumerate(table):
        lines.append(
            f"{t[0]:<{widths[0]}} {t[1]:>{widths[1]}} {t[2]:>{widths[2]}} "
            f"{t[3]:>{widths[3]}} {t[4]:<{widths[4]}}".rstrip()
        )
        if n and rows[n - 1][1] is not None:
            lines.append(rows[n - 1][1] or "")
    return "\n".join(lines) + "\n"


# iproute2 misc/ss.c, _usage(): the options netstack's ss implements, in ss's words
SS_USAGE: Final = (
    "Usage: ss [ OPTIONS ]\n"
    "       ss [ OPTIONS ] [ FILTER ]\n"
    "   -h, --help          this message\n"
    "   -V, --version       output version information\n"
    "   -n, --numeric       don't resolve service names\n"
    "   -a, --all           display all sockets\n"
    "   -l, --listening     display listening sockets\n"
    "   -e, --extended      show detailed socket information\n"
    "   -i, --info          show internal TCP information\n"
    "\n"
    "   -4, --ipv4          display only IP version 4 sockets\n"
    "   -6, --ipv6          display only IP version 6 sockets\n"
    "   -t, --tcp           display only TCP sockets\n"
    "   -u, --udp           display only UDP sockets"
)


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``ss`` command: TCP sockets (``-t``, :func:`ss`) or UDP ones (``-u``)."""
    if "-h" in argv or "--help" in argv:  # ss.c: help() prints the usage on stdout, exit 0
        proc.out(SS_USAGE)
        return 0
    if "-V" in argv or "--version" in argv:
        proc.out("ss utility, iproute2-6.1.0")
        return 0
    long = {"--tcp": "-t", "--udp": "-u", "--all": "-a", "--listening": "-l", "--info": "-i",
            "--numeric": "-n", "--extended": "-e", "--ipv4": "-4", "--ipv6": "-6"}  # fmt: skip
    argv = [long.get(a, a) for a in argv]
    for a in argv:
        bad = a if a.startswith("--") else next((c for c in a[1:] if c not in "tuali46ne"), None)
        if not a.startswith("-") or bad is not None:
            what = f"unrecognized option '{a}'" if a.startswith("--") else (
                f"invalid option -- '{bad}'" if a.startswith("-") else f'unknown argument "{a}"'
            )  # fmt: skip
            proc.err(f"ss: {what}\n{SS_USAGE}")
            return 255
    flags = "".join(a[1:] for a in argv if a.startswith("-") and not a.startswith("--"))
    if "t" in flags or "--tcp" in argv:  # TCP sockets
        text = ss(host.net, shlex.join(argv))
        if text:
            proc.out(text.rstrip("\n"))
        return 0
    listening = "l" in flags
    show_all = "a" in flags
    rows = [("State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port")]
    ipv4 = ipv4_of(host.net)
    for sk in sorted(ipv4.udp_table.sockets(), key=lambda s: s.inet_num):
        if sk.family != 2:
            continue  # a dual-stack AF_INET6 socket (IPv6 UDP is not listed here)
        connected = bool(sk.inet_dport)
        if (listening and connected) or not (show_all or listening or connected):
            continue
        local = f"{ntoa(sk.inet_rcv_saddr) if sk.inet_rcv_saddr else '0.0.0.0'}:{sk.inet_num}"
        peer = f"{ntoa(sk.inet_daddr)}:{sk.inet_dport}" if connected else "0.0.0.0:*"
        state = "ESTAB" if connected else "UNCONN"
        rows.append((state, str(sk.sk_rmem_alloc), str(sk.sk_wmem_alloc), local, peer))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        proc.out(
            f"{r[0]:<{widths[0]}} {r[1]:<{widths[1]}} {r[2]:<{widths[2]}} "
            f"{r[3]:>{widths[3]}} {r[4]:<{widths[4]}}".rstrip()
        )
    return 0
