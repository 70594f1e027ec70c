"""ZooKeeper edge: everything that talks to ZooKeeper through kazoo lives in this package.

- session.py:  ZkOptions and ZkSession: the one KazooClient and its connection policy (deadlines, reconnects,
               read retries, lost-answer lookups), one-line failures (exit 1)
- read.py:     pipelined reads of brokers, topics, partition state -> model.ClusterState
- configs.py:  throttle config read-modify-write with change notifications, our prior-values record
- reassign.py, election.py: the create-only triggers
- backend.py:  ZkBackend, the backend.Backend that the sequencing modules use
"""
