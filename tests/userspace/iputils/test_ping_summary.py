"""ping's closing lines, as iputils' ping_print_finish computes them."""

from __future__ import annotations

from netstack.userspace.iputils.ping import PingReply, PingResult


def result(rtts: list[float], sent: int, time: float, errors: int = 0) -> PingResult:
    replies = tuple(PingReply(i + 1, r) for i, r in enumerate(rtts))
    errs = tuple(PingReply(0, None, error="x") for _ in range(errors))
    return PingResult("10.0.0.2", sent, replies, errs, time)


def test_one_probe_takes_no_time() -> None:
    # the time is cur_time - start_time: the last send, not the last reply
    text = result([0.020033], 1, 0.0).summary()
    assert text.splitlines() == [
        "--- 10.0.0.2 ping statistics ---",
        "1 packets transmitted, 1 received, 0% packet loss, time 0ms",
        "rtt min/avg/max/mdev = 20.033/20.033/20.033/0.000 ms",
    ]


def test_loss_is_printed_with_percent_g_and_figures_in_integer_microseconds() -> None:
    # 1 of 3 lost: printf("%g%%", 100.0/3) -> 33.3333%
    lines = result([0.0100199, 0.0200331], 3, 2.0004996).summary().splitlines()
    assert lines[1] == "3 packets transmitted, 2 received, 33.3333% packet loss, time 2000ms"
    # usec: 10019 and 20033; avg 15026; var = (tsum2 - tsum*tsum/2)/2 = 25070049; sqrt 5007
    assert lines[2] == "rtt min/avg/max/mdev = 10.019/15.026/20.033/5.007 ms"


def test_errors_and_total_loss() -> None:
    lines = result([], 1, 0.0, errors=1).summary().split("\n")
    assert lines == [
        "--- 10.0.0.2 ping statistics ---",
        "1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms",
        "",  # finish()'s last putchar('\n'), with no rtt or pipe figures before it
    ]
