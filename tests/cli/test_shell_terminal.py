"""``netstack shell`` driven as a terminal (pexpect on a pty): prompt, editing, history,
completion, Ctrl-C, errors that keep the prompt."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo.toml")
PROMPT = "netstack> "


def spawn(tmp_path: Path, *args: str) -> Any:
    env = {**os.environ, "NETSTACK_HISTFILE": str(tmp_path / "history"), "TERM": "dumb"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "netstack.cli.main", "shell", *args],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    child.expect_exact("Type 'help' for the commands")
    child.expect_exact(PROMPT)
    return child


def run(child: Any, line: str, prompt: str = PROMPT) -> str:
    child.sendline(line)
    child.expect_exact(prompt)
    return str(child.before).replace("\r\n", "\n")


@pytest.mark.slow
def test_commands_errors_history_and_exit(tmp_path: Path) -> None:
    child = spawn(tmp_path, DEMO)
    out = run(child, "a ip -br addr show dev eth0")
    assert "eth0@if2         UP             10.0.1.1/24" in out
    out = run(child, "a ping -c 2 b")
    assert "PING b (10.0.2.2) 56(84) bytes of data." in out
    assert "2 packets transmitted, 2 received, 0% packet loss" in out
    out = run(child, "a ip addr add 10.0.0.1/33 dev eth0")
    assert 'Error: any valid prefix is expected rather than "10.0.0.1/33".' in out
    out = run(child, "frobnicate --now")
    assert "frobnicate: command not found" in out
    out = run(child, 'a ip "unbalanced')
    assert "syntax error" in out
    run(child, "r", prompt="r# ")
    out = run(child, "sysctl net.ipv4.ip_forward", prompt="r# ")
    assert "net.ipv4.ip_forward = 1" in out
    run(child, "exit")
    # history and line editing
    run(child, "b hostname")
    child.send("\x1b[A")  # up arrow: the previous line comes back
    child.expect_exact("b hostname")
    child.send("\x01")  # Ctrl-A: start of line
    child.send("# ")  # comment it out
    out = run(child, "")
    assert "\nb\r" not in out
    child.send("a hostnamx")
    child.send("\x08e")  # backspace, retype
    out = run(child, "")
    assert "\na\n" in out.replace("\r", "")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    history = (tmp_path / "history").read_text().splitlines()
    assert history[-4:] == ["b hostname", "# b hostname", "a hostname", "exit"]


@pytest.mark.slow
def test_tab_completion_and_frozen_time(tmp_path: Path) -> None:
    child = spawn(tmp_path, DEMO)
    child.send("r hostn\t")
    child.expect_exact("r hostname ")
    child.send("\r")
    child.expect_exact(PROMPT)
    assert "\nr\r\n" in "\n" + str(child.before)
    child.send("a ip -br link show et\t")
    child.expect_exact("show eth0 ")
    out = run(child, "")
    assert "eth0@if2" in out and "lo " not in out
    child.send("r tcpdump -i \t\t")  # two tabs list the candidates
    child.expect("eth0 +eth1 +lo")
    child.expect_exact(PROMPT + "r tcpdump -i ")  # readline redisplays the line
    out = run(child, "")  # run the line as it stands: tcpdump wants the -i argument
    assert "tcpdump: option requires an argument -- 'i'" in out
    # time stands still at the prompt
    run(child, "a ping -c 1 b")
    first = run(child, "a nstat -a IpOutRequests")
    import time

    time.sleep(1.0)  # wall time passes; virtual time must not (no ARP/NUD timer fires)
    out = run(child, "a ip neigh show 10.0.1.254")
    assert "REACHABLE" in out
    assert run(child, "a nstat -a IpOutRequests") == first
    run(child, "sleep 60")
    out = run(child, "a ip neigh show 10.0.1.254")
    assert "STALE" in out
    child.sendline("quit")
    child.expect(pexpect.EOF)


@pytest.mark.slow
def test_ctrl_c_interrupts_a_command_not_the_shell(tmp_path: Path) -> None:
    child = spawn(tmp_path, DEMO, "--pace", "20")
    child.sendline("a ping b")
    child.expect_exact("icmp_seq=3 ")
    child.sendintr()
    child.expect(r"(\d+) packets transmitted, (\d+) received, 0% packet loss")
    sent, received = int(child.match.group(1)), int(child.match.group(2))
    assert sent == received >= 3
    child.expect_exact(PROMPT)
    child.send("half a line")
    # (wait for readline's echo: a SIGINT that lands while readline is still handling
    # keystrokes, not waiting in select(), is only seen at the next keystroke)
    child.expect_exact("half a line")
    child.sendintr()  # at the prompt: the line is dropped, the shell stays
    child.expect_exact(PROMPT)
    out = run(child, "b hostname")
    assert out.endswith("\nb\n")
    child.sendeof()  # Ctrl-D leaves
    child.expect_exact("exit")
    child.expect(pexpect.EOF)


@pytest.mark.slow
def test_ping_without_count_follows_the_wall_clock(tmp_path: Path) -> None:
    """At the prompt, ``ping`` without ``-c`` prints one line a second until Ctrl-C (not
    800 lines in three seconds); with ``-c`` time still jumps."""
    import time

    child = spawn(tmp_path, DEMO)
    out = run(child, "a ping -c 5 b")  # virtual: immediate
    assert "5 packets transmitted, 5 received" in out
    child.sendline("a ping b")
    child.expect_exact("icmp_seq=1 ")
    t0 = time.monotonic()
    child.expect_exact("icmp_seq=2 ")
    assert time.monotonic() - t0 > 0.5
    child.sendintr()
    child.expect(r"(\d+) packets transmitted, (\d+) received, 0% packet loss")
    sent = int(child.match.group(1))
    assert 2 <= sent <= 10
    child.expect_exact(PROMPT)
    out = run(child, "a ping6 -c 1 b")
    assert "ping: b: Address family for hostname not supported" in out
    child.sendline("exit")
    child.expect(pexpect.EOF)


@pytest.mark.slow
def test_empty_shell_grows_a_lab_and_keeps_history(tmp_path: Path) -> None:
    """``--empty``: hosts and links added at the prompt, then used; ``history``, ``clear``,
    and the new tools (traceroute, nc, ss -s, ip -j) on the result."""
    child = spawn(tmp_path, "--empty")
    run(child, "add host a c")
    run(child, "add link a:eth0 c:eth0 delay 5ms")
    out = run(child, "add link a:eth0 c:eth1")
    assert "add: " in out
    run(child, "a ip addr add 10.0.0.1/24 dev eth0")
    run(child, "c ip addr add 10.0.0.2/24 dev eth0")
    out = run(child, "a ping -c 2 c")
    assert "64 bytes from c (10.0.0.2): icmp_seq=1 ttl=64 time=20.0 ms" in out  # + ARP
    out = run(child, "a traceroute -n c")
    assert " 1  10.0.0.2  10.000 ms  10.000 ms  10.050 ms" in out  # the NIC queues the 3rd
    out = run(child, "a ip -j -p addr show dev eth0")
    assert '"local": "10.0.0.1",' in out
    out = run(child, "a ss -s")
    assert "Transport Total     IP        IPv6" in out
    out = run(child, "history 3")
    assert out.replace("\r", "").split("\n")[1:4] == [
        "    8  a ip -j -p addr show dev eth0",
        "    9  a ss -s",
        "   10  history 3",
    ]
    out = run(child, "clear")
    assert "\x1b[H\x1b[2J" in out
    child.sendline("exit")
    child.expect(pexpect.EOF)


@pytest.mark.slow
def test_experiment_shows_its_progress_on_a_terminal() -> None:
    """A long run draws a progress line on a terminal — the share done, the step, the
    time left once a step has shown how long one takes — and erases it before the result."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "netstack.cli.main", "experiment", "gre-lltx", "--both", "--cpus", "2"],
        env={**os.environ, "TERM": "dumb"},
        encoding="utf-8",
        timeout=60,
    )
    child.expect(r"\rexperiment gre-lltx \(both\)  \[[#.]{30}\] +\d+%  step 1 of 2, estimating")
    child.expect(r"\rexperiment gre-lltx \(both\)  \[#+\.*\] +\d+%  step 2 of 2, \d+ s left")
    child.expect_exact("experiment gre-lltx: seed 1 (2010): ip_gre: lockless xmit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.slow
def test_netperf_and_udpflood_at_the_prompt(tmp_path: Path) -> None:
    """netperf's table on the demo lab (10 ms round trips to b), completion of its options,
    and a run that ends on a path where no virtual time passes (a to r: a veth)."""
    child = spawn(tmp_path, DEMO)
    child.send("a netperf -t TCP_\t\t")
    child.expect("TCP_RR +TCP_STREAM")
    child.expect_exact(PROMPT + "a netperf -t TCP_")
    child.send("RR -H b -l 1\r")
    child.expect_exact("MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET")
    child.expect(r"16384  131072 1        1       1\.00 +(\d+\.\d\d)")
    assert 95 <= float(child.match.group(1)) <= 100  # one transaction per 10 ms round trip
    child.expect_exact(PROMPT)
    out = run(child, "a netperf -H 10.0.1.254 -l 10 --budget 100000")
    assert "netperf: stopped at the budget of 100000 bytes" in out
    assert "netperf: no virtual time passed" in out
    out = run(child, "a udpflood -c 3 b:7")
    assert "udpflood: 3 datagrams of 64 bytes to 10.0.2.2:7" in out
    out = run(child, "a ethtool -h")
    assert "Usage:" in out and "bad command line" not in out
    child.sendline("exit")
    child.expect(pexpect.EOF)
