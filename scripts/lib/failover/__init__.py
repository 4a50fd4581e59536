"""The driver behind scripts/failover: etcd, a two-node Patroni cluster with a synchronous standby,
two issuerd instances, load, and the leader taken away three times.

Test tooling only. scripts/failover runs this package in three steps (`python3 scripts/lib/failover
up|run|down`, __main__.py): `up` starts etcd and the Patroni nodes (cluster.py) and prints the
environment the script then uses to migrate and import cards; `run` drives the load and the
faults and prints the last line, `failover: name=value ...` (drive.py, on the harness of
scripts/lib/reliability); `down` stops every process the run started, whatever state it is in.
"""
