package tun

import (
	"errors"
	"fmt"

	"wanlab/netns"
)

// Open creates the TUN device name inside ns and prepares its queue with
// SetupQueue. The device is created on a thread inside ns, as Linux
// requires; afterwards it can be used from any goroutine. The interface is
// left down and without addresses: configure it through ns.
func Open(ns *netns.Handle, name string, o Options) (Device, error) {
	if err := netns.CheckIfName(name); err != nil {
		return nil, fmt.Errorf("tun: %w", err)
	}
	o = o.withDefaults()
	if o.MTU < 68 || o.MTU > MaxCoalesced {
		return nil, fmt.Errorf("tun: MTU %d of %s is outside [68, %d]", o.MTU, name, MaxCoalesced)
	}
	if o.TxQueueLen < 0 {
		return nil, fmt.Errorf("tun: txqueuelen %d of %s must not be negative", o.TxQueueLen, name)
	}
	var dev Device
	err := netns.Do(ns, func() error {
		switch o.Kind {
		case Offload:
			d, err := openOffload(name, o.MTU)
			if err != nil {
				return err
			}
			dev = d
		case Raw:
			d, err := openRaw(name)
			if err != nil {
				return err
			}
			dev = d
		case VNet:
			d, err := openVNet(name)
			if err != nil {
				return err
			}
			dev = d
		default:
			return fmt.Errorf("tun: unknown device kind %d (use tun.Offload, tun.Raw or tun.VNet)", o.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if o.Kind == Raw || o.Kind == VNet {
		err = ns.SetMTU(name, o.MTU)
	}
	if err == nil {
		err = SetupQueue(ns, name, o.TxQueueLen)
	}
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	return dev, nil
}
