package main

/*
#cgo pkg-config: ayatana-appindicator3-0.1
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <libayatana-appindicator/app-indicator.h>

// systray v1.2.2 keeps its AppIndicator in a static variable and has no
// tooltip on Linux; its SetTitle also sets the panel label, which would put
// the whole status text beside the icon. To set only the indicator's title
// (what StatusNotifier hosts show on hover) this program provides
// app_indicator_new itself: the linker binds systray's call to this
// definition, which calls the library's through dlsym(RTLD_NEXT) and keeps
// the pointer.
static AppIndicator *strata_indicator;

AppIndicator *app_indicator_new(const gchar *id, const gchar *icon_name, AppIndicatorCategory category) {
	static AppIndicator *(*real)(const gchar *, const gchar *, AppIndicatorCategory);
	if (real == NULL) {
		real = dlsym(RTLD_NEXT, "app_indicator_new");
	}
	strata_indicator = real(id, icon_name, category);
	return strata_indicator;
}

static gboolean strata_do_set_title(gpointer data) {
	if (strata_indicator != NULL) {
		app_indicator_set_title(strata_indicator, (const gchar *)data);
	}
	g_free(data);
	return FALSE;
}

// Runs on the GTK main thread, like every systray change.
static void strata_set_title(const char *title) {
	g_idle_add(strata_do_set_title, g_strdup(title));
}
*/
import "C"

import (
	"unsafe"

	"github.com/getlantern/systray"

	"github.com/strata-companion/companion/assets"
)

// Linux trays take PNG.
func setIcon(name string) { systray.SetIcon(assets.PNG(name)) }

func setTooltip(s string) {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	C.strata_set_title(cs)
}
