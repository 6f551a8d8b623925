package desktop

import (
	"context"
	"fmt"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/strata-companion/companion/app/traymodel"
)

// Notifier raises notifications through the freedesktop notification
// service (org.freedesktop.Notifications on the session bus): every Linux
// desktop has one, and it needs no extra program such as notify-send.
type Notifier struct {
	mu   sync.Mutex
	conn *dbus.Conn
	icon string // path of the app icon written for the notification server
}

// NewNotifier returns a notifier; it connects on first use, so a tray that
// starts before the session bus is up still notifies later.
func NewNotifier(iconPath string) *Notifier { return &Notifier{icon: iconPath} }

// Notify shows n. Urgent notices ask to stay until dismissed.
func (n *Notifier) Notify(ctx context.Context, no traymodel.Notice) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn == nil || !n.conn.Connected() {
		c, err := dbus.ConnectSessionBus()
		if err != nil {
			return fmt.Errorf("no session bus for notifications: %w", err)
		}
		n.conn = c
	}
	urgency := byte(1)
	timeout := int32(-1)
	if no.Urgent {
		urgency, timeout = 2, 0
	}
	hints := map[string]dbus.Variant{
		"urgency":       dbus.MakeVariant(urgency),
		"desktop-entry": dbus.MakeVariant("strata-tray"),
	}
	obj := n.conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	call := obj.CallWithContext(ctx, "org.freedesktop.Notifications.Notify", 0,
		"Strata Companion", uint32(0), n.icon, no.Title, no.Body, []string{}, hints, timeout)
	if call.Err != nil {
		return fmt.Errorf("the desktop's notification service did not take it: %w", call.Err)
	}
	return nil
}

// Close releases the bus connection.
func (n *Notifier) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn != nil {
		return n.conn.Close()
	}
	return nil
}
