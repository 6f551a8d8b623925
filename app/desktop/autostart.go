package desktop

import "github.com/strata-companion/companion/internal/autostart"

// Autostart is the tray's start-at-login entry; it lives in
// internal/autostart, which the wizard uses too.
type Autostart = autostart.Entry
