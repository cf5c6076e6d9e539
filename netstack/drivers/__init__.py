"""Device drivers: veth pairs, an emulated Ethernet NIC pair, loopback, dummy.

Each module mirrors its kernel driver: a setup function that shapes a
:class:`~netstack.core.netdevice.NetDevice` (kernel: ``alloc_netdev(…, setup)``),
a :class:`~netstack.core.netdevice.NetDeviceOps` subclass, and — for devices
that receive — a NAPI poll function.
"""
