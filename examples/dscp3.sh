#!/bin/sh
# htb under a 10 Mbit/s parent, three classes of 1, 2 and 3 Mbit/s by
# DSCP (AF11, AF21, AF31, which is also the default class), each allowed
# to borrow up to the parent, pfifo and bfifo leaves: the tree CI compares
# with the kernel's.
#
#   sudo wanlab calibrate --script examples/dscp3.sh --duration 4s --warmup 1s
#   sudo wanlab up --up-script examples/dscp3.sh
DEV=${DEV:-eth0}
TC=tc

$TC qdisc del dev $DEV root 2>/dev/null
$TC qdisc add dev $DEV root handle 1: htb default 30
$TC class add dev $DEV parent 1: classid 1:1 htb rate 10mbit ceil 10mbit
$TC class add dev $DEV parent 1:1 classid 1:10 htb rate 1mbit ceil 10mbit
$TC class add dev $DEV parent 1:1 classid 1:20 htb rate 2mbit ceil 10mbit
$TC class add dev $DEV parent 1:1 classid 1:30 htb rate 3mbit ceil 10mbit
$TC qdisc add dev $DEV parent 1:10 handle 10: pfifo limit 100
$TC qdisc add dev $DEV parent 1:20 handle 20: bfifo limit 150000
$TC qdisc add dev $DEV parent 1:30 handle 30: pfifo limit 100

U32="$TC filter add dev $DEV parent 1: protocol ip prio 1 u32"
$U32 match ip dsfield 0x28 0xfc flowid 1:10   # AF11
$U32 match ip dsfield 0x48 0xfc flowid 1:20   # AF21
$U32 match ip dsfield 0x68 0xfc flowid 1:30   # AF31
