#!/bin/sh
# Records the iperf3 JSON fixtures of tests/test_iperf.py over loopback (iperf3 3.12 here):
# each case's client stdout (-J) and server log (-J --logfile), rate-limited so they stay small.
set -e
cd "$(dirname "$0")"
run() {  # name, client options
    rm -f "$1.server.json"
    iperf3 -s -1 -p 5399 -J --logfile "$1.server.json" & pid=$!
    sleep 0.5
    iperf3 -c 127.0.0.1 -p 5399 -t 2 -i 1 -J $2 > "$1.client.json" || true
    wait $pid || true
}
run tcp "-b 20M"
run tcp-reverse "-R -b 20M"
run udp "-u -b 2M -l 1200"
run tcp-parallel "-P 2 -b 10M"
# A client killed mid-run leaves JSON cut off: keep the first 60 % of a complete one.
head -c "$(( $(wc -c < tcp.client.json) * 6 / 10 ))" tcp.client.json > truncated.client.json
