"""A cluster of several nodes, as far as ``GET /_cluster/health`` tells: a
:class:`~esmapper.testing.cluster.ClusterProxy` rule.

The local server is one node, so every replica copy it is asked for stays unassigned (a
copy never shares a node with another copy of its shard) and the cluster is yellow for
good, as a one-node Elasticsearch is. On a cluster of three nodes the same yellow means a
replica that could be placed is not: something to look at. :class:`ReportedNodes`
answers the cluster health APIs (``/_cluster/health``, ``/_cluster/health/<index>``) with
the number of nodes and data nodes a test chooses, the shard counts untouched, so a test
can see how esmapper tells the two apart.
"""

from __future__ import annotations

from esmapper.testing._rules import Exchange, Reply, Rule, json_reply

__all__ = ["ReportedNodes"]


class ReportedNodes(Rule):
    """Answer ``GET /_cluster/health[/<index>]`` as a cluster of ``nodes`` nodes, each
    a data node."""

    def __init__(self, nodes: int) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster has at least one node, not {nodes}")
        self.nodes = nodes

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if exchange.method != "GET" or not exchange.path.startswith("/_cluster/health"):
            return reply
        body = reply.json()
        if reply.status != 200 or not isinstance(body, dict):
            return reply
        body["number_of_nodes"] = body["number_of_data_nodes"] = self.nodes
        return json_reply(reply.status, body)
