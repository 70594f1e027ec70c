"""ZooKeeper edge: everything that talks to ZooKeeper through kazoo lives in this package.

- connect.py: connect-string parsing, client lifecycle, error mapping (exit 1)
- read.py:    pipelined reads of brokers, topics, partition state -> model.ClusterState
- configs.py: throttle config read-modify-write with change notifications, our prior-values record
- reassign.py: /admin/reassign_partitions create / read
"""
