"""The ns-3 half of ``airlink validate aqm``: run by an interpreter that has the ``ns3`` wheel
(not airlink), with a JSON list of points on stdin; prints a JSON list of results.

Each point is the dumbbell airlink runs (see :mod:`airlink.validate_aqm`): a sender and a
receiver joined by a point-to-point link of ``rate_bps`` and ``delay_ms`` each way, the queue
discipline ``kind`` (ns-3's implementation, configured with airlink's defaults) on the
sender's device with a limit of ``queue`` packets, and ``flows`` NewReno bulk transfers for
``seconds``. The device's own queue holds one packet, so the standing queue forms in the
discipline, as it does in airlink's link. Every 10 ms the packets waiting are sampled: the
discipline's and the one in the device's queue (airlink's discipline hands a packet to the link
only when the link is free, so it holds both).
"""

from __future__ import annotations

import json
import sys
from typing import Any

SAMPLE_S = 0.010


def run_point(p: dict[str, Any]) -> dict[str, Any]:
    from ns import ns  # the wheel takes about 30 s to load: once per process

    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpNewReno"))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))  # 1500-B packets with timestamps
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 26))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 26))
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(p["seed"])

    nodes = ns.NodeContainer()
    nodes.Create(2)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{p['rate_bps']}bps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue(f"{p['delay_ms']}ms"))
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
    devices = p2p.Install(nodes)
    ns.InternetStackHelper().Install(nodes)

    tch = ns.TrafficControlHelper()
    limit = ns.StringValue(f"{p['queue']}p")
    kind = p["kind"]
    if kind == "droptail":
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", limit)
    elif kind == "codel":
        tch.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", limit, "Target", ns.StringValue("5ms"),
                             "Interval", ns.StringValue("100ms"))
    elif kind == "fq_codel":
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", limit, "Target", ns.StringValue("5ms"),
                             "Interval", ns.StringValue("100ms"), "Flows", ns.UintegerValue(1024),
                             "DropBatchSize", ns.UintegerValue(64))
    elif kind == "pie":
        tch.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", limit, "QueueDelayReference", ns.TimeValue(ns.MilliSeconds(15)),
                             "Tupdate", ns.TimeValue(ns.MilliSeconds(15)), "A", ns.DoubleValue(0.125),
                             "B", ns.DoubleValue(1.25), "MaxBurstAllowance", ns.TimeValue(ns.MilliSeconds(150)))
    elif kind == "red":
        tch.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", limit, "MinTh", ns.DoubleValue(5), "MaxTh", ns.DoubleValue(15),
                             "QW", ns.DoubleValue(0.002), "LInterm", ns.DoubleValue(10), "Gentle", ns.BooleanValue(True))
    else:
        raise ValueError(f"unknown discipline {kind!r}")
    qdiscs = tch.Install(devices.Get(0))
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    interfaces = addresses.Assign(devices)

    sinks = []
    for i in range(p["flows"]):
        port = 5000 + i
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        apps = sink.Install(nodes.Get(1))
        apps.Start(ns.Seconds(0))
        sinks.append(apps)
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(interfaces.GetAddress(1), port).ConvertTo())
        bulk.Install(nodes.Get(0)).Start(ns.Seconds(0))

    q = qdiscs.Get(0)
    device_queue = ns.DynamicCast[ns.PointToPointNetDevice](devices.Get(0)).GetQueue()
    samples = []
    steps = round(p["seconds"] / SAMPLE_S)
    for _ in range(steps):
        ns.Simulator.Stop(ns.Seconds(SAMPLE_S))
        ns.Simulator.Run()
        samples.append(q.GetNPackets() + device_queue.GetNPackets())
    received = [ns.DynamicCast[ns.PacketSink](s.Get(0)).GetTotalRx() for s in sinks]
    stats = q.GetStats()
    out = {
        "bytes_delivered": sum(received),
        "queue_mean_packets": sum(samples) / len(samples),
        "drops": stats.nTotalDroppedPackets,
        "dequeued": stats.nTotalDequeuedPackets,
    }
    ns.Simulator.Destroy()
    return out


def main() -> None:
    points = json.load(sys.stdin)
    json.dump([run_point(p) for p in points], sys.stdout)


if __name__ == "__main__":
    main()
