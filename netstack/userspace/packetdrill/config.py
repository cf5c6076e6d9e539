"""Run options: packetdrill's command-line and in-script ``--options``.

Theory of operation: :class:`Config` holds what ``config.c`` keeps for a run
(IP version and addresses, ports, MSS, timing tolerances, TS handling, …).
:func:`apply_options` takes ``(name, value)`` pairs — first the script's own
``--name=value`` lines, then the command line's, which win — with
packetdrill's checks and messages (``option 'x' unknown``, ``bad --mss: 0``).
Options of packetdrill's remote and shared-object modes, which have no meaning
here, stop with an :class:`~.errors.Unsupported` error naming them.

Addresses: packetdrill routes the remote prefix (192.0.2.0/24 or
2001:db8::/32) over its tun device and gives the device a random local address
in 192.168.0.0/16 or fd3d:fa7b:d17d::/48; the runner uses fixed ones (below),
so a run is repeatable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import attrs

from netstack.userspace.packetdrill.errors import ScriptError, Unsupported

__all__ = ["DEFAULT_ADDRESSES", "Config", "apply_options"]

DEFAULT_ADDRESSES: Final = {
    "ipv4": ("192.168.0.1", "192.0.2.1"),
    "ipv4-mapped-ipv6": ("192.168.0.1", "192.0.2.1"),
    "ipv6": ("fd3d:fa7b:d17d::1", "2001:db8::1"),
}
"""``--ip_version`` → (local address, remote address)."""


@attrs.define
class Config:
    """One run's settings (packetdrill's ``struct config``)."""

    ip_version: str = "ipv4"
    local_ip: str = ""
    remote_ip: str = ""
    bind_port: int = 8080
    connect_port: int = 8080
    mss: int = 0
    mtu: int = 1500
    tolerance_usecs: int = 4000
    tolerance_percent: float = 12.5
    tcp_ts_ecr_scaled: bool = False
    tcp_ts_tick_usecs: int = 0
    strict_segments: bool = False
    non_fatal_packet: bool = False
    non_fatal_syscall: bool = False
    init_scripts: list[str] = attrs.field(factory=list)
    defines: dict[str, str] = attrs.field(factory=dict)
    dry_run: bool = False
    verbose: bool = False
    timeout: float = 60.0
    """Virtual seconds a wait (an outbound packet, a call that blocks) may take past
    its scripted time before the run is ended as hung (this runner's own option)."""

    @property
    def socket_family(self) -> int:
        return 2 if self.ip_version == "ipv4" else 10

    @property
    def wire_version(self) -> int:
        return 6 if self.ip_version == "ipv6" else 4

    def addresses(self) -> tuple[str, str]:
        """(local, remote) as the live test uses them."""
        local, remote = DEFAULT_ADDRESSES[self.ip_version]
        return self.local_ip or local, (self.remote_ip.split("/")[0] or remote)


_WITH_ARG: Final = {
    "ip_version", "bind_port", "code_command", "code_format", "code_sockopt", "connect_port",
    "remote_ip", "local_ip", "gateway_ip", "netmask_ip", "speed", "mss", "mtu",
    "init_scripts", "tolerance_usecs", "tolerance_percent", "wire_server_ip",
    "wire_server_at", "wire_server_port", "wire_client_dev", "wire_server_dev",
    "so_filename", "so_flags", "tcp_ts_tick_usecs", "non_fatal", "define", "timeout",
}  # fmt: skip
_NO_ARG: Final = {
    "wire_client", "wire_server", "tcp_ts_ecr_scaled", "strict_segments", "dry_run",
    "is_anyip", "send_omit_free", "debug", "verbose",
}  # fmt: skip
_UNSUPPORTED: Final = {
    "wire_client": "remote (wire client/server) mode",
    "wire_server": "remote (wire client/server) mode",
    "wire_server_ip": "remote (wire client/server) mode",
    "wire_server_at": "remote (wire client/server) mode",
    "wire_server_port": "remote (wire client/server) mode",
    "wire_client_dev": "remote (wire client/server) mode",
    "wire_server_dev": "remote (wire client/server) mode",
    "so_filename": "shared-object (user-space stack) mode",
    "so_flags": "shared-object (user-space stack) mode",
    "is_anyip": "anyip mode",
    "speed": "a link speed for the tun device",
}


def _int(where: str, name: str, value: str, lo: int, hi: int) -> int:
    try:
        v = int(value, 0)
    except ValueError:
        v = lo - 1
    if not lo <= v <= hi:
        raise ScriptError(f"{where}: bad --{name}: {value}")
    return v


def apply_options(
    config: Config, options: Iterable[tuple[str, str | None]], where: str, *, script: bool = True
) -> None:
    """Apply ``--name[=value]`` options to *config*, as config.c's process_option() does.

    Raises:
        ScriptError: an unknown option, a missing or forbidden argument, a bad value.
        Unsupported: an option of a packetdrill mode this runner does not have.
    """
    for name, value in options:
        if name == "D":
            name = "define"
        elif name == "v":
            name = "verbose"
        if name not in _WITH_ARG and name not in _NO_ARG:
            raise ScriptError(f"{where}: option '{name}' unknown")
        if name == "timeout" and script:
            raise ScriptError(f"{where}: option '{name}' unknown")
        if value is not None and name in _NO_ARG:
            raise ScriptError(f"{where}: option '{name}' forbids an argument")
        if value is None and name in _WITH_ARG:
            raise ScriptError(f"{where}: option '{name}' requires an argument")
        if name in _UNSUPPORTED:
            raise Unsupported(f"{where}: unsupported: --{name}: {_UNSUPPORTED[name]}")
        v = value or ""
        if name == "ip_version":
            if v not in ("ipv4", "ipv6", "ipv4-mapped-ipv6"):
                raise ScriptError(f"{where}: bad --ip_version: {v}")
            config.ip_version = v
        elif name == "bind_port":
            config.bind_port = _int(where, name, v, 1, 0xFFFF)
        elif name == "connect_port":
            config.connect_port = _int(where, name, v, 1, 0xFFFF)
        elif name == "remote_ip":
            config.remote_ip = v
        elif name == "local_ip":
            config.local_ip = v
        elif name in ("gateway_ip", "netmask_ip", "code_command", "debug", "send_omit_free"):
            pass  # the device is routed directly; the evaluator is built in
        elif name == "code_format":
            if v != "python":
                raise ScriptError(f"{where}: unsupported --code_format '{v}'")
        elif name == "code_sockopt":
            if v not in ("", "TCP_INFO"):
                raise Unsupported(f"{where}: unsupported: --code_sockopt={v} (only TCP_INFO)")
        elif name == "mss":
            config.mss = _int(where, name, v, 1, 0xFFFF)
        elif name == "mtu":
            config.mtu = _int(where, name, v, 68, 65535)
        elif name == "init_scripts":
            config.init_scripts = [s for s in v.split(",") if s]
        elif name == "tolerance_usecs":
            config.tolerance_usecs = _int(where, name, v, 1, 1 << 62)
        elif name == "tolerance_percent":
            try:
                pct = float(v)
            except ValueError:
                pct = -1.0
            if not 0.0 <= pct <= 100.0:
                raise ScriptError(f"{where}: bad --tolerance_percent: {v}")
            config.tolerance_percent = pct
        elif name == "tcp_ts_ecr_scaled":
            config.tcp_ts_ecr_scaled = True
        elif name == "tcp_ts_tick_usecs":
            config.tcp_ts_tick_usecs = _int(where, name, v, 0, 1_000_000)
        elif name == "strict_segments":
            config.strict_segments = True
        elif name == "non_fatal":
            for token in v.replace(" ", ",").split(","):
                if token == "packet":
                    config.non_fatal_packet = True
                elif token == "syscall":
                    config.non_fatal_syscall = True
        elif name == "dry_run":
            config.dry_run = True
        elif name == "verbose":
            config.verbose = True
        elif name == "define":
            sym, eq, val = v.partition("=")
            if not eq or not sym:
                raise ScriptError(f"{where}: bad definition: {v}")
            config.defines[sym] = val
        elif name == "timeout":
            try:
                config.timeout = float(v)
            except ValueError:
                config.timeout = -1.0
            if config.timeout <= 0:
                raise ScriptError(f"{where}: bad --timeout: {v}")
