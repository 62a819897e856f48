#!/usr/bin/env bash
# `make cluster`: etcd and three Cumulus nodes on loopback, data under .cluster/,
# until Ctrl-C. Kill the leader (the command is printed) and watch another take over.
set -euo pipefail

BIN="${CUMULUS_BIN:-.build/debug/cumulus}"
DIR="${CLUSTER_DIR:-.cluster}"
ETCD_PORT="${ETCD_PORT:-12379}"
BASE_PORT="${BASE_PORT:-18761}"
mkdir -p "$DIR"
chmod 700 "$DIR"

secret="$DIR/replication-secret"
if [ ! -s "$secret" ]; then
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret"
fi
chmod 600 "$secret"

pids=()
stop() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "cluster stopped (data kept in $DIR)"
}
trap stop EXIT INT TERM

etcd --name cluster --data-dir "$DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
  --initial-cluster "cluster=http://127.0.0.1:$((ETCD_PORT + 10))" \
  --logger zap --log-outputs "$DIR/etcd.log" &
pids+=($!)
until curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; do sleep 0.2; done

start_node() { # name port [extra…]
  local name=$1 port=$2
  shift 2
  "$BIN" serve --data "$DIR/$name" --port "$port" --replication-secret-file "$secret" \
    --etcd "http://127.0.0.1:$ETCD_PORT" --cluster local --node "$name" --advertise "http://127.0.0.1:$port" \
    "$@" > "$DIR/$name.out" 2> "$DIR/$name.err" &
  pids+=($!)
  echo "$name: http://127.0.0.1:$port  (pid $!, log $DIR/$name.err)"
}
wait_up() { until curl -sf "http://127.0.0.1:$1/healthz" > /dev/null; do sleep 0.2; done; }

# The first node starts the cluster's log (and mints development credentials on a new one).
start_node n1 "$BASE_PORT" --dev
wait_up "$BASE_PORT"
start_node n2 "$((BASE_PORT + 1))"
start_node n3 "$((BASE_PORT + 2))"
wait_up "$((BASE_PORT + 1))"
wait_up "$((BASE_PORT + 2))"

api=$(grep -m1 '  ckAPIToken:' "$DIR/n1.out" | awk '{print $2}' || true)
web=$(grep -m1 'ckWebAuthToken:' "$DIR/n1.out" | awk '{print $2}' || true)
cat <<INFO

etcd:      http://127.0.0.1:$ETCD_PORT   (etcdctl --endpoints 127.0.0.1:$ETCD_PORT get --prefix /cumulus/local/)
status:    $BIN status --url http://127.0.0.1:$BASE_PORT --replication-secret-file $secret
tokens:    ckAPIToken=$api  ckWebAuthToken=$web   (minted by n1 on a new cluster; see $DIR/n1.out)
write:     curl -s -X POST "http://127.0.0.1:$BASE_PORT/database/1/iCloud.com.example.cumulus/development/private/zones/modify?ckAPIToken=$api&ckWebAuthToken=$web" -d '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}'
           (a follower answers NOT_LEADER with the leader's URL)
failover:  kill -9 the leader's pid (the node whose status says "role: leader"); another leads within the lease (5 s)

Ctrl-C stops everything.
INFO
wait
