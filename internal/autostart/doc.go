// Package autostart is the tray's "start at login" entry (XDG autostart on
// Linux and other Unix desktops, the Run values on Windows: see
// autostart_windows.go). Both the
// tray (its menu item) and the wizard (its checkbox) switch it, so it lives
// here rather than in the tray's app/desktop.
package autostart
