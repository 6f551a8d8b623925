//go:build !linux && !windows

package desktop

import (
	"context"
	"errors"

	"github.com/strata-companion/companion/app/traymodel"
)

// Notifier is not implemented on this platform.
type Notifier struct{}

func NewNotifier(iconPath string) *Notifier { return &Notifier{} }

func (*Notifier) Notify(context.Context, traymodel.Notice) error {
	return errors.New("notifications are not implemented on this platform")
}

func (*Notifier) Close() error { return nil }
