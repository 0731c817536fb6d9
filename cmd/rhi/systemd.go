package main

import (
	"context"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/status"
)

// notifyReady tells systemd (Type=notify) that the first tick has run. It
// does nothing outside systemd.
func notifyReady(log logrus.FieldLogger) {
	if ok, err := sd.SdNotify(false, sd.SdNotifyReady); err != nil {
		log.WithError(err).Warn("systemd notify READY failed")
	} else if ok {
		log.Debug("told systemd we are ready")
	}
}

func notifyStopping() { sd.SdNotify(false, sd.SdNotifyStopping) }

// watchdog pings systemd's watchdog at half its interval, but only while the
// loop is really turning (status.Healthy): a stuck loop stops the pings and
// systemd restarts rhi. It returns at once when no watchdog is configured.
func watchdog(ctx context.Context, d interface{ Status() status.Status }, now func() time.Time, log logrus.FieldLogger) {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		log.WithError(err).Warn("systemd watchdog settings unreadable; not pinging")
		return
	}
	if interval == 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	watchdogLoop(ctx, t.C, func() error { return status.Healthy(status.SummaryOf(d), now()) },
		func() { sd.SdNotify(false, sd.SdNotifyWatchdog) }, log)
}

// watchdogLoop pings on every tick while healthy says the loop turns.
func watchdogLoop(ctx context.Context, ticks <-chan time.Time, healthy func() error, ping func(), log logrus.FieldLogger) {
	stalled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		if err := healthy(); err != nil {
			if !stalled {
				log.WithError(err).Error("loop not turning; withholding watchdog pings")
			}
			stalled = true
			continue
		}
		if stalled {
			log.Info("loop turning again; watchdog pings resumed")
		}
		stalled = false
		ping()
	}
}

// sdNotify sends state to systemd; outside systemd it does nothing.
func sdNotify(state string) { sd.SdNotify(false, state) }

// monotonicUsec is CLOCK_MONOTONIC in microseconds, as systemd's
// MONOTONIC_USEC= wants it.
func monotonicUsec() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Sec)*1e6 + uint64(ts.Nsec)/1e3
}
