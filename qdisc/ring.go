package qdisc

import "wanlab/packet"

// ring is the packet FIFO the disciplines queue into.
type ring = packet.Queue
