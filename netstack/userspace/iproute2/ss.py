"""``ss``: the TCP sockets of a host, as iproute2's ``ss -t [-a|-l] [-i] [-n] [-4|-6]`` prints them.

Theory of operation: as the real ss, this one asks the kernel through
sock_diag (:mod:`netstack.socket.diag`: an ``inet_diag_req_v2`` with the
family, the protocol and the states wanted) and prints the ``inet_diag_msg``
rows it gets back: the state by ss's names, the queue columns the kernel
fills (a listener's accept queue and backlog, a connection's bytes not yet
read and not yet acknowledged), the addresses; ``-i`` asks for
``INET_DIAG_INFO`` and adds the second line of ``tcp_info`` fields in ss's
order and spelling (misc/ss.c, tcp_show_info). Nothing here reads a kernel
table.
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

iproute2: misc/ss.c (tcp_show, tcp_show_info, udp_show, inet_addr_print).
"""

from __future__ import annotations

import errno
import shlex
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.ipv4.proc import snmp_seq_show, sockstat6_seq_show, sockstat_seq_show
from netstack.socket.diag import (
    INET_DIAG_INFO,
    TCPF_ALL,
    InetDiagMsg,
    InetDiagReqV2,
    inet_diag_dump,
)
from netstack.tcp import TCP_STATE_NAMES, TcpInfo
from netstack.tcp.sock import TCP_CLOSE, TCP_LISTEN
from netstack.wire.ipv4 import IPPROTO_TCP, IPPROTO_UDP, ntoa
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["SS_USAGE", "main", "ss"]

AF_UNSPEC = 0
AF_INET = 2
AF_INET6 = 10
# ss's state filters (misc/ss.c): -l, -a, and the default SS_CONN (neither listening nor closed)
SS_LISTEN: Final = 1 << TCP_LISTEN
SS_CONN: Final = TCPF_ALL & ~((1 << TCP_LISTEN) | (1 << TCP_CLOSE))


def _fmt_rate(bps: float) -> str:
    """ss's sprint_bw(): bps, Kbps, Mbps, Gbps with one decimal."""
    if bps > 1e9:
        return f"{bps / 1e9:.1f}Gbps"
    if bps > 1e6:
        return f"{bps / 1e6:.1f}Mbps"
    if bps > 1e3:
        return f"{bps / 1e3:.1f}Kbps"
    return f"{bps:.0f}bps"


def _info_line(i: TcpInfo) -> str:
    """The ``-i`` line, in tcp_show_info()'s order."""
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
    if i.delivery_rate:
        out.append("delivery_rate " + _fmt_rate(i.delivery_rate * 8))
    if i.delivered:
        out.append(f"delivered:{i.delivered}")
    if i.delivery_rate_app_limited:
        out.append("app_limited")
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


def _addr(family: int, addr: int, port: int, v6only: bool = True) -> str:
    """ss's address column: ``10.0.0.1:80``, ``[2001:db8::1]:80``, and ``*:80`` for
    the wildcard of a dual-stack AF_INET6 socket (IPV6_V6ONLY off: inet_diag's
    INET_DIAG_SKV6ONLY), which takes IPv4 too; port 0 is ``*`` (misc/ss.c,
    inet_addr_print, resolve_service)."""
    service = str(port) if port else "*"
    if family == AF_INET6:
        if not addr and not v6only:
            return f"*:{service}"
        return f"[{ntoa6(addr)}]:{service}"
    return f"{ntoa(addr)}:{service}"


def _row(r: InetDiagMsg) -> tuple[str, int, int, str, str]:
    fam = r.idiag_family
    return (
        TCP_STATE_NAMES.get(r.idiag_state, str(r.idiag_state)),
        r.idiag_rqueue,
        r.idiag_wqueue,
        _addr(fam, r.idiag_src, r.idiag_sport, r.skv6only),
        _addr(fam, r.idiag_dst, r.idiag_dport, r.skv6only),
    )


def _states(listening: bool, all_: bool) -> int:
    """The ``idiag_states`` of ``-l``, ``-a`` or neither (ss's default: connected)."""
    return SS_LISTEN if listening else TCPF_ALL if all_ else SS_CONN


def ss(net: Net, command: str = "-t") -> str:
    """Run ``ss`` with *command*'s options (TCP sockets); return what it prints."""
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
    req = InetDiagReqV2(
        families.pop() if len(families) == 1 else AF_UNSPEC,
        IPPROTO_TCP,
        idiag_ext=1 << (INET_DIAG_INFO - 1) if show_info else 0,
        idiag_states=_states(listening, all_),
    )
    rows = [(_row(r), _info_line(r.info) if r.info is not None else None)
            for r in inet_diag_dump(net, req)]  # fmt: skip
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


def _sockstat(text: str | None) -> dict[str, dict[str, int]]:
    """``PROTO: key value…`` lines → ``{PROTO: {key: value}}``. ss.c: get_sockstat_line()."""
    out: dict[str, dict[str, int]] = {}
    for line in (text or "").splitlines():
        proto, _, rest = line.partition(": ")
        words = rest.split()
        out[proto] = {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}
    return out


def print_summary(net: Net) -> str:
    """``ss -s``: from /proc/net/sockstat, sockstat6 and the Tcp MIB, as ss reads them.

    iproute2: misc/ss.c, print_summary() (no /proc/slabinfo here: no SYN-RECV term).
    """
    s4 = _sockstat(sockstat_seq_show(net))
    s6 = _sockstat(sockstat6_seq_show(net))
    snmp = snmp_seq_show(net).splitlines()
    tcp = dict(zip(snmp[-6].split()[1:], snmp[-5].split()[1:], strict=True))
    estab = int(tcp["CurrEstab"])

    def g(table: dict[str, dict[str, int]], proto: str, key: str) -> int:
        return table.get(proto, {}).get(key, 0)

    tcp4, tcp6 = g(s4, "TCP", "inuse"), g(s6, "TCP6", "inuse")
    tws, total = g(s4, "TCP", "tw"), g(s4, "TCP", "alloc")
    rows = [
        ("RAW", g(s4, "RAW", "inuse"), g(s6, "RAW6", "inuse")),
        ("UDP", g(s4, "UDP", "inuse"), g(s6, "UDP6", "inuse")),
        ("TCP", tcp4, tcp6),
    ]
    inet = ("INET", sum(r[1] for r in rows), sum(r[2] for r in rows))
    frag = ("FRAG", g(s4, "FRAG", "inuse"), g(s6, "FRAG6", "inuse"))
    lines = [
        f"Total: {g(s4, 'sockets', 'used')}",
        f"TCP:   {total + tws} (estab {estab}, closed {total - (tcp4 + tcp6 - tws)}, "
        f"orphaned {g(s4, 'TCP', 'orphan')}, timewait {tws})",
        "",
        "Transport Total     IP        IPv6",
    ]
    for name, v4, v6 in (*rows, inet, frag):
        lines.append(f"{name}\t  {v4 + v6:<9} {v4:<9} {v6:<9}")
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
    "   -u, --udp           display only UDP sockets\n"
    "\n"
    "   -s, --summary       show socket usage summary"
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
            "--numeric": "-n", "--extended": "-e", "--ipv4": "-4", "--ipv6": "-6",
            "--summary": "-s"}  # fmt: skip
    argv = [long.get(a, a) for a in argv]
    for a in argv:
        bad = a if a.startswith("--") else next((c for c in a[1:] if c not in "tuali46nes"), None)
        if not a.startswith("-") or bad is not None:
            what = f"unrecognized option '{a}'" if a.startswith("--") else (
                f"invalid option -- '{bad}'" if a.startswith("-") else f'unknown argument "{a}"'
            )  # fmt: skip
            proc.err(f"ss: {what}\n{SS_USAGE}")
            return 255
    flags = "".join(a[1:] for a in argv if a.startswith("-") and not a.startswith("--"))
    if "s" in flags:  # ss.c: the summary, then (with -t/-u) the sockets
        proc.out(print_summary(host.net))
        if not set(flags) & set("tu"):
            return 0
        argv = [a.replace("s", "") if a.startswith("-") and not a.startswith("--") else a
                for a in argv if a not in ("-s", "--summary")]  # fmt: skip
        argv = [a for a in argv if a != "-"]
        flags = flags.replace("s", "")
    if "t" in flags or "--tcp" in argv:  # TCP sockets
        text = ss(host.net, shlex.join(argv))
        if text:
            proc.out(text.rstrip("\n"))
        return 0
    # UDP (IPv4; for UDP, ss's -l means unconnected: TCP_CLOSE)
    listening = "l" in flags
    states = (1 << TCP_CLOSE) if listening else _states(False, "a" in flags)
    req = InetDiagReqV2(AF_INET, IPPROTO_UDP, idiag_states=states)
    rows: list[tuple[str, ...]] = [
        ("State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port")
    ]
    rows += [tuple(str(x) for x in _row(r)) for r in inet_diag_dump(host.net, req)]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        proc.out(
            f"{r[0]:<{widths[0]}} {r[1]:<{widths[1]}} {r[2]:<{widths[2]}} "
            f"{r[3]:>{widths[3]}} {r[4]:<{widths[4]}}".rstrip()
        )
    return 0
