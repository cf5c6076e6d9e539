"""``%{ … }%`` snippets: ``tcp_info`` snapshots and a safe Python evaluator.

Theory of operation: packetdrill's code events are *data collection* at the
event's time — a ``getsockopt(TCP_INFO)`` of the socket under test — and the
snippets themselves run when the script ends, in one Python namespace, each
after the ``tcpi_*`` values of its own snapshot were assigned
(``code.c``: ``write_tcp_info`` then the text). This module takes the snapshot
from netstack's ``struct tcp_sock`` in the kernel's ``tcp_info`` units
(microseconds for ``tcpi_rto``/``tcpi_rtt``, milliseconds for
``tcpi_last_*``, bytes, packets) and runs the snippets with a restricted
evaluator: the snippet is parsed with :mod:`ast` and may only use literals,
names, arithmetic, comparisons, boolean logic, ``assert``, ``if``, simple
assignments and the calls ``print``, ``abs``, ``min``, ``max``, ``int``,
``float``, ``len``, ``round``, ``str``, ``bool`` — no attributes, imports or
dunder names. Python 2's ``print x`` statement is accepted.

A snippet that names a ``tcpi_`` field netstack's ``tcp_info`` does not have
is an :class:`~.errors.Unsupported` error, never a pass.

Kernel: net/ipv4/tcp.c, tcp_get_info().
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any, Final

from netstack.core.win_minmax import minmax_get
from netstack.sites import kernel
from netstack.tcp.rate import tcp_compute_delivery_rate
from netstack.userspace.packetdrill.errors import ScriptFailure, Unsupported

__all__ = [
    "TCP_INFO_SYMBOLS",
    "UNSUPPORTED_TCP_INFO",
    "run_code",
    "tcp_info_snapshot",
]

TCP_INFO_SYMBOLS: Final[dict[str, int]] = {
    "TCP_ESTABLISHED": 1,
    "TCP_SYN_SENT": 2,
    "TCP_SYN_RECV": 3,
    "TCP_FIN_WAIT1": 4,
    "TCP_FIN_WAIT2": 5,
    "TCP_TIME_WAIT": 6,
    "TCP_CLOSE": 7,
    "TCP_CLOSE_WAIT": 8,
    "TCP_LAST_ACK": 9,
    "TCP_LISTEN": 10,
    "TCP_CLOSING": 11,
    "TCP_CA_Open": 0,
    "TCP_CA_Disorder": 1,
    "TCP_CA_CWR": 2,
    "TCP_CA_Recovery": 3,
    "TCP_CA_Loss": 4,
    "TCPI_OPT_TIMESTAMPS": 1,
    "TCPI_OPT_SACK": 2,
    "TCPI_OPT_WSCALE": 4,
    "TCPI_OPT_ECN": 8,
    "TCPI_OPT_ECN_SEEN": 16,
    "TCPI_OPT_SYN_DATA": 32,
    "TFO_STATUS_UNSPEC": 0,
    "TFO_COOKIE_UNAVAILABLE": 1,
    "TFO_DATA_NOT_ACKED": 2,
    "TFO_SYN_RETRANSMITTED": 3,
}

UNSUPPORTED_TCP_INFO: Final[frozenset[str]] = frozenset()
"""``tcp_info`` fields of Linux 6.18 that netstack does not keep: none (the ECN ones are 0)."""

_M32: Final = 0xFFFFFFFF


@kernel("net/ipv4/tcp.c", "tcp_get_info")
def tcp_info_snapshot(sk: Any, now_jiffies: int) -> dict[str, int]:
    """``getsockopt(TCP_INFO)`` of a netstack TCP socket, as packetdrill's variables.

    Kernel: net/ipv4/tcp.c, tcp_get_info().
    """
    hz: int = sk.tcp.hz

    def j2us(j: int) -> int:
        return j * 1_000_000 // hz

    def j2ms(j: int) -> int:
        return j * 1000 // hz

    listen = sk.state == 10
    options = 0
    if sk.tstamp_ok:
        options |= 1
    if sk.sack_ok:
        options |= 2
    if sk.wscale_ok:
        options |= 4
    if sk.syn_data_acked:
        options |= 32  # TCPI_OPT_SYN_DATA
    rtt_min = minmax_get(sk.rtt_min)  # tcp_min_rtt(): ~0U before any sample
    info = {
        "tcpi_state": sk.state,
        "tcpi_fastopen_client_fail": sk.fastopen_client_fail,
        "tcpi_ca_state": sk.icsk_ca_state,
        "tcpi_retransmits": sk.icsk_retransmits,
        "tcpi_probes": sk.icsk_probes_out,
        "tcpi_backoff": sk.icsk_backoff,
        "tcpi_options": options,
        "tcpi_snd_wscale": sk.snd_wscale if sk.wscale_ok else 0,
        "tcpi_rcv_wscale": sk.rcv_wscale if sk.wscale_ok else 0,
        "tcpi_rto": j2us(sk.icsk_rto),
        "tcpi_ato": j2us(sk.icsk_ack_ato),
        "tcpi_snd_mss": sk.mss_cache,
        "tcpi_rcv_mss": sk.icsk_ack_rcv_mss,
        "tcpi_unacked": sk.sk_ack_backlog if listen else sk.packets_out,
        "tcpi_sacked": sk.sk_max_ack_backlog if listen else sk.sacked_out,
        "tcpi_lost": sk.lost_out,
        "tcpi_retrans": sk.retrans_out,
        "tcpi_fackets": 0,
        "tcpi_last_data_sent": j2ms((now_jiffies - sk.lsndtime) & _M32),
        "tcpi_last_ack_sent": 0,
        "tcpi_last_data_recv": j2ms((now_jiffies - sk.icsk_ack_lrcvtime) & _M32),
        "tcpi_last_ack_recv": j2ms((now_jiffies - sk.rcv_tstamp) & _M32),
        "tcpi_pmtu": sk.icsk_pmtu_cookie,
        "tcpi_rcv_ssthresh": sk.rcv_ssthresh,
        "tcpi_rtt": sk.srtt_us >> 3,
        "tcpi_rttvar": sk.mdev_us >> 2,
        "tcpi_snd_ssthresh": sk.snd_ssthresh,
        "tcpi_snd_cwnd": sk.snd_cwnd,
        "tcpi_advmss": sk.advmss,
        "tcpi_reordering": sk.reordering,
        "tcpi_rcv_rtt": sk.rcv_rtt_est_rtt_us >> 3,
        "tcpi_rcv_space": sk.rcvq_space_space,
        "tcpi_total_retrans": sk.total_retrans,
        "tcpi_pacing_rate": int(sk.sk_pacing_rate),
        "tcpi_bytes_acked": sk.bytes_acked,
        "tcpi_bytes_received": sk.bytes_received,
        "tcpi_segs_out": sk.segs_out,
        "tcpi_segs_in": sk.segs_in,
        "tcpi_notsent_bytes": max(0, (sk.write_seq - sk.snd_nxt) & _M32),
        "tcpi_min_rtt": rtt_min,
        "tcpi_delivery_rate": tcp_compute_delivery_rate(sk),
        "tcpi_delivery_rate_app_limited": 1 if sk.rate_app_limited else 0,
        "tcpi_data_segs_in": sk.data_segs_in,
        "tcpi_data_segs_out": sk.data_segs_out,
        "tcpi_delivered": sk.delivered,
        "tcpi_delivered_ce": 0,
        "tcpi_bytes_sent": sk.bytes_sent,
        "tcpi_bytes_retrans": sk.bytes_retrans,
        "tcpi_snd_wnd": sk.snd_wnd,
        "tcpi_rcv_wnd": sk.rcv_wnd,
        "tcpi_dsack_dups": sk.dsack_dups,
        "tcpi_reord_seen": sk.reord_seen,
        "tcpi_rcv_ooopack": sk.rcv_ooopack,
        # sk_max_pacing_rate: ~0 (no SO_MAX_PACING_RATE), as tcpi_pacing_rate
        "tcpi_max_pacing_rate": 0xFFFFFFFFFFFFFFFF,
        "tcpi_rehash": sk.timeout_rehash,  # + plb_rehash (no PLB)
        "tcpi_total_rto": sk.total_rto,
        "tcpi_total_rto_recoveries": sk.total_rto_recoveries,
        "tcpi_total_rto_time": (
            sk.total_rto_time
            + ((sk.tcp.tcp_time_stamp_ms() - sk.rto_stamp) & _M32 if sk.rto_stamp else 0)
        )
        & _M32,
    }
    # no ECN, no AccECN: the CE and ECN byte counters stay 0
    for name in (
        "tcpi_received_ce",
        "tcpi_delivered_e1_bytes",
        "tcpi_delivered_e0_bytes",
        "tcpi_delivered_ce_bytes",
        "tcpi_received_e1_bytes",
        "tcpi_received_e0_bytes",
        "tcpi_received_ce_bytes",
        "tcpi_accecn_fail_mode",
        "tcpi_accecn_opt_seen",
    ):
        info[name] = 0
    # tcp_get_info_chrono_stats(): microseconds busy, rwnd- and sndbuf-limited
    stats = []
    for chrono in (1, 2, 3):  # TCP_CHRONO_BUSY, _RWND_LIMITED, _SNDBUF_LIMITED
        stat = sk.chrono_stat[chrono - 1]
        if chrono == sk.chrono_type:
            stat += (now_jiffies - sk.chrono_start) & _M32
        stats.append(j2us(stat))
    info["tcpi_busy_time"] = sum(stats)
    info["tcpi_rwnd_limited"] = stats[1]
    info["tcpi_sndbuf_limited"] = stats[2]
    return info


_PRINT2: Final = re.compile(r"^(\s*)print(?:\s+(?!\()|\s*$)(.*)$")

_ALLOWED_NODES: Final = (
    ast.Module,
    ast.Expr,
    ast.Assert,
    ast.Assign,
    ast.AugAssign,
    ast.If,
    ast.Pass,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.keyword,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)

_CALLS: Final[dict[str, Callable[..., Any]]] = {
    "abs": abs,
    "min": min,
    "max": max,
    "int": int,
    "float": float,
    "len": len,
    "round": round,
    "str": str,
    "bool": bool,
}


def _py2_to_3(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        m = _PRINT2.match(line)
        if m:
            lines.append(f"{m.group(1)}print({m.group(2).rstrip().rstrip(',')})")
        else:
            lines.append(line)
    return "\n".join(lines)


def _check(tree: ast.AST, where: str, known: set[str]) -> None:
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise Unsupported(
                f"{where}: unsupported: {type(node).__name__} in Python code (the runner "
                "evaluates assertions, arithmetic, comparisons, if, assignments and print)"
            )
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise Unsupported(f"{where}: unsupported: the name {node.id} in Python code")
            if isinstance(node.ctx, ast.Load) and node.id in UNSUPPORTED_TCP_INFO:
                raise Unsupported(
                    f"{where}: unsupported: tcp_info field {node.id} "
                    "(netstack's tcp_info does not keep it)"
                )
            if isinstance(node.ctx, ast.Store):
                known.add(node.id)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                raise Unsupported(f"{where}: unsupported: Attribute in Python code")
            if not isinstance(func, ast.Name) or func.id not in (*_CALLS, "print"):
                name = func.id if isinstance(func, ast.Name) else "this call"
                raise Unsupported(f"{where}: unsupported: {name}() in Python code")


def run_code(
    fragments: list[tuple[str, int, dict[str, int], str]],
    output: Callable[[str], None] = print,
) -> None:
    """Run the collected snippets in order, as packetdrill's generated Python file does.

    *fragments* are ``(path, line, tcp_info_vars, text)``.

    Raises:
        Unsupported: a snippet uses what the evaluator does not allow.
        ScriptFailure: an assertion failed (``FILE:LINE: error in Python code: …``)
            or the snippet raised.
    """
    namespace: dict[str, Any] = {"__builtins__": {}}
    namespace.update(_CALLS)
    namespace["True"], namespace["False"], namespace["None"] = True, False, None

    def _print(*args: Any, sep: str = " ", end: str = "\n") -> None:
        output(sep.join(str(a) for a in args) + end.rstrip("\n"))

    namespace["print"] = _print
    compiled = []
    known: set[str] = set()
    for path, line, variables, text in fragments:
        where = f"{path}:{line}"
        try:
            tree = ast.parse(_py2_to_3(text), filename=path, mode="exec")
        except SyntaxError as e:
            raise ScriptFailure(
                f"{where}: error in Python code: SyntaxError: {e.msg}", path=path, line=line
            ) from None
        known.update(variables)
        _check(tree, where, known)
        compiled.append((path, line, variables, compile(tree, path, "exec")))
    for path, line, variables, code_obj in compiled:
        namespace.update(TCP_INFO_SYMBOLS)
        namespace.update(variables)
        try:
            exec(code_obj, namespace)  # restricted: see _check and the empty __builtins__
        except AssertionError as e:
            detail = f": {e}" if str(e) else ""
            raise ScriptFailure(
                f"{path}:{line}: error in Python code: AssertionError{detail}", path=path, line=line
            ) from None
        except Exception as e:
            raise ScriptFailure(
                f"{path}:{line}: error in Python code: {type(e).__name__}: {e}",
                path=path,
                line=line,
            ) from None
