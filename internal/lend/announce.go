// Package lend lets a second PC lend its GPU: the lender announces itself on
// the LAN with DNS-SD over multicast DNS, and this PC finds and pairs with it.
package lend

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/libp2p/zeroconf/v2"
)

// ServiceType is the DNS-SD service a lender announces (in domain local.).
const ServiceType = "_strata-lend._tcp"

// TXTVersion is the format of the TXT record this build writes and reads
// (key "v"). A change of meaning of a key takes a new version; a new key
// does not (readers ignore keys they do not know, as RFC 6763 asks).
const TXTVersion = "1"

// Limits of what an announcement carries.
const (
	MaxNameBytes    = 63 // a DNS label's size
	MaxGPUs         = 16
	MaxGPUNameBytes = 200
	MaxVersionBytes = 64
)

// WithdrawTimeout bounds the withdraw func Announce returns.
const WithdrawTimeout = 2 * time.Second

// GPU is one of the lender's graphics cards.
type GPU struct {
	Name     string `json:"name"`
	TotalMiB int    `json:"total_mib"`
}

// Announcement is what a lender tells the LAN about itself. Nothing in it is
// a secret: anyone on the LAN reads it, and anyone can send one, so none of
// it is trusted until pairing has proved the host key (HostKey is a claim).
type Announcement struct {
	Name         string   `json:"name"`            // instance name: the lender PC's name (host name by default)
	Host         string   `json:"host"`            // the address to reach it (IPv4 first); filled by Browse from the record
	Addrs        []string `json:"addrs,omitempty"` // every address the record carried, Host first (Browse; a PC on Wi-Fi and Ethernet has several)
	Port         int      `json:"port"`            // its ssh server's port
	PairPort     int      `json:"pair_port"`       // the TCP port of its pairing exchange
	GPUs         []GPU    `json:"gpus"`
	AgentVersion string   `json:"agent_version"` // the lender's strata-vision-relay version
	HostKey      string   `json:"host_key"`      // the SHA256 fingerprint ("SHA256:...") of its ssh host key
	OS           string   `json:"os"`            // "windows" / "linux"
}

// TXT keys. Port, Host and Addrs travel in the SRV and A/AAAA records.
const (
	keyVersion  = "v"
	keyName     = "name"
	keyPairPort = "pair"
	keyHostKey  = "hostkey"
	keyAgent    = "agent"
	keyOS       = "os"
	keyGPU      = "gpu" // gpu0, gpu1, ...: "<total MiB> <name>"
)

// TXT is the announcement's TXT record: key=value strings of at most 255
// bytes each. It holds the fields above and nothing else, so no code, key
// or secret can reach it.
func (a Announcement) TXT() ([]string, error) {
	if err := checkName(a.Name); err != nil {
		return nil, err
	}
	if err := checkPort("pairing port", a.PairPort); err != nil {
		return nil, err
	}
	if err := checkHostKey(a.HostKey); err != nil {
		return nil, err
	}
	if err := checkVersion(a.AgentVersion); err != nil {
		return nil, err
	}
	if err := checkOS(a.OS); err != nil {
		return nil, err
	}
	if len(a.GPUs) > MaxGPUs {
		return nil, fmt.Errorf("lend: %d GPUs; an announcement carries at most %d", len(a.GPUs), MaxGPUs)
	}
	txt := []string{
		keyVersion + "=" + TXTVersion,
		keyName + "=" + a.Name,
		keyPairPort + "=" + strconv.Itoa(a.PairPort),
		keyHostKey + "=" + a.HostKey,
		keyAgent + "=" + a.AgentVersion,
		keyOS + "=" + a.OS,
	}
	for i, g := range a.GPUs {
		if err := checkGPU(g); err != nil {
			return nil, err
		}
		txt = append(txt, fmt.Sprintf("%s%d=%d %s", keyGPU, i, g.TotalMiB, g.Name))
	}
	for _, s := range txt {
		if len(s) > 255 {
			return nil, fmt.Errorf("lend: TXT string %.40q... is %d bytes, over DNS's 255", s, len(s))
		}
	}
	return txt, nil
}

// ParseTXT reads a TXT record TXT wrote. It is strict: every key this
// version knows must be there once, well formed; an empty string (a record
// with no data) is skipped and keys it does not know are ignored (a later
// v=1 lender may add some). Keys are case-insensitive (RFC 6763). Host,
// Addrs and Port are not in the record: they stay zero.
func ParseTXT(txt []string) (Announcement, error) {
	vals := map[string]string{}
	for _, s := range txt {
		if s == "" {
			continue
		}
		if len(s) > 255 {
			return Announcement{}, fmt.Errorf("lend: TXT string %.40q... is %d bytes, over DNS's 255", s, len(s))
		}
		k, v, ok := strings.Cut(s, "=")
		k = strings.ToLower(k)
		if k == "" {
			return Announcement{}, fmt.Errorf("lend: TXT string %q has no key", s)
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				return Announcement{}, fmt.Errorf("lend: TXT key %q is not printable ASCII", k)
			}
		}
		if _, dup := vals[k]; dup {
			return Announcement{}, fmt.Errorf("lend: TXT key %q appears twice", k)
		}
		if !ok {
			if known(k) {
				return Announcement{}, fmt.Errorf("lend: TXT key %q has no value", k)
			}
			continue
		}
		vals[k] = v
	}
	v, ok := vals[keyVersion]
	if !ok {
		return Announcement{}, errors.New("lend: not a Strata lender's announcement (no v= key)")
	}
	if v != TXTVersion {
		return Announcement{}, fmt.Errorf("lend: the lender announces format v=%.20q and this version of Strata Companion reads v=%s: update Strata Companion on both PCs", v, TXTVersion)
	}
	var a Announcement
	var err error
	get := func(k string) string {
		s, ok := vals[k]
		if !ok && err == nil {
			err = fmt.Errorf("lend: the announcement has no %s= key", k)
		}
		return s
	}
	a.Name = get(keyName)
	pair := get(keyPairPort)
	a.HostKey = get(keyHostKey)
	a.AgentVersion = get(keyAgent)
	a.OS = get(keyOS)
	if err != nil {
		return Announcement{}, err
	}
	if err := checkName(a.Name); err != nil {
		return Announcement{}, err
	}
	if a.PairPort, err = parsePort("pairing port", pair); err != nil {
		return Announcement{}, err
	}
	for _, check := range []func() error{
		func() error { return checkHostKey(a.HostKey) },
		func() error { return checkVersion(a.AgentVersion) },
		func() error { return checkOS(a.OS) },
	} {
		if err := check(); err != nil {
			return Announcement{}, err
		}
	}
	n := 0
	for k := range vals {
		if i, isGPU, err := gpuIndex(k); err != nil {
			return Announcement{}, err
		} else if isGPU && i+1 > n {
			n = i + 1
		}
	}
	for i := 0; i < n; i++ {
		s, ok := vals[fmt.Sprintf("%s%d", keyGPU, i)]
		if !ok {
			return Announcement{}, fmt.Errorf("lend: the announcement has gpu%d but no gpu%d", n-1, i)
		}
		g, err := parseGPU(s)
		if err != nil {
			return Announcement{}, fmt.Errorf("lend: gpu%d: %w", i, err)
		}
		a.GPUs = append(a.GPUs, g)
	}
	return a, nil
}

func known(k string) bool {
	switch k {
	case keyVersion, keyName, keyPairPort, keyHostKey, keyAgent, keyOS:
		return true
	}
	_, isGPU, _ := gpuIndex(k)
	return isGPU
}

// gpuIndex reads "gpu<N>": isGPU for a key gpu followed by digits only, and
// an error when those digits are not 0..MaxGPUs-1 written plainly.
func gpuIndex(k string) (int, bool, error) {
	d, ok := strings.CutPrefix(k, keyGPU)
	if !ok || d == "" || strings.Trim(d, "0123456789") != "" {
		return 0, false, nil
	}
	i, err := strconv.Atoi(d)
	if err != nil || strconv.Itoa(i) != d || i >= MaxGPUs {
		return 0, true, fmt.Errorf("lend: TXT key %.20q: GPUs are gpu0 to gpu%d", k, MaxGPUs-1)
	}
	return i, true, nil
}

func parseGPU(s string) (GPU, error) {
	mib, name, ok := strings.Cut(s, " ")
	if !ok {
		return GPU{}, fmt.Errorf("%.40q is not \"<MiB> <name>\"", s)
	}
	n, err := strconv.Atoi(mib)
	if err != nil || strconv.Itoa(n) != mib {
		return GPU{}, fmt.Errorf("memory %.20q is not a whole number of MiB", mib)
	}
	g := GPU{Name: name, TotalMiB: n}
	return g, checkGPU(g)
}

func checkGPU(g GPU) error {
	if g.TotalMiB < 0 || g.TotalMiB > 1<<24 {
		return fmt.Errorf("lend: GPU %q: memory %d MiB out of range", g.Name, g.TotalMiB)
	}
	return checkText("GPU name", g.Name, MaxGPUNameBytes)
}

func checkName(s string) error { return checkText("PC name", s, MaxNameBytes) }

// checkText: 1 to max bytes of printable UTF-8.
func checkText(what, s string, max int) error {
	if s == "" {
		return fmt.Errorf("lend: the %s is empty", what)
	}
	if len(s) > max {
		return fmt.Errorf("lend: the %s %.40q... is %d bytes; at most %d", what, s, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("lend: the %s %q is not UTF-8", what, s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("lend: the %s %q has an unprintable character", what, s)
		}
	}
	return nil
}

func checkPort(what string, p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("lend: the %s %d is not 1-65535", what, p)
	}
	return nil
}

func parsePort(what, s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(p) != s {
		return 0, fmt.Errorf("lend: the %s %.20q is not a number", what, s)
	}
	return p, checkPort(what, p)
}

func checkHostKey(s string) error {
	b64, ok := strings.CutPrefix(s, "SHA256:")
	if !ok {
		return fmt.Errorf("lend: host key fingerprint %.60q does not start with SHA256:", s)
	}
	if b, err := base64.RawStdEncoding.Strict().DecodeString(b64); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("lend: host key fingerprint %.60q is not SHA256: and 43 base64 characters (as ssh-keygen -l prints it)", s)
	}
	return nil
}

func checkVersion(s string) error {
	if s == "" || len(s) > MaxVersionBytes || strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_") != "" {
		return fmt.Errorf("lend: agent version %.70q is not a version (letters, digits, . + - _; at most %d)", s, MaxVersionBytes)
	}
	return nil
}

func checkOS(s string) error {
	if s != "windows" && s != "linux" {
		return fmt.Errorf("lend: OS %.20q is not windows or linux", s)
	}
	return nil
}

// instanceLabel is the DNS-SD instance name: the PC's name cut to DNS-safe
// characters and a tag of its host key, so that two lenders of one name (an
// impostor, a reinstalled PC) are two instances. The real name is in the TXT
// record. It doubles as the record's host name (<label>.local.), which keeps
// clear of the name the PC's own mDNS responder answers for.
func instanceLabel(a Announcement) string {
	var b strings.Builder
	dash := false
	for _, r := range a.Name {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "strata"
	}
	sum := sha256.Sum256([]byte(a.HostKey))
	return name + "-" + hex.EncodeToString(sum[:4])
}

// recordTTL is the records' time to live: RFC 6762's 120 s for records
// naming a host. A lender that vanishes without its goodbye (slept, lost
// its Wi-Fi) leaves other mDNS caches within two minutes.
const recordTTL = 120

// Announce announces a on every up, multicast-capable interface, until ctx
// ends or withdraw is called. a.Name defaults to the host name; a.Port is
// the ssh server's. withdraw sends the goodbye (the records with TTL 0) and
// returns within WithdrawTimeout; calling it again does nothing.
func Announce(ctx context.Context, a Announcement) (withdraw func(), err error) {
	if a.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("lend: no PC name given and the host name is unknown: %v", err)
		}
		a.Name = truncateUTF8(h, MaxNameBytes)
	}
	if err := checkPort("ssh port", a.Port); err != nil {
		return nil, err
	}
	txt, err := a.TXT()
	if err != nil {
		return nil, err
	}
	ifaces, addrs, err := announceInterfaces()
	if err != nil {
		return nil, err
	}
	label := instanceLabel(a)
	srv, err := zeroconf.RegisterProxy(label, ServiceType, "local.", a.Port, label, addrs, txt, ifaces, zeroconf.TTL(recordTTL))
	if err != nil {
		return nil, fmt.Errorf("lend: announcing on the network: %v (is another program holding UDP port 5353 without sharing it?)", err)
	}
	stop := make(chan struct{})
	var once sync.Once
	withdraw = func() {
		once.Do(func() {
			close(stop)
			done := make(chan struct{})
			go func() { srv.Shutdown(); close(done) }()
			select {
			case <-done:
			case <-time.After(WithdrawTimeout):
			}
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			withdraw()
		case <-stop:
		}
	}()
	return withdraw, nil
}

// announceInterfaces: the up, multicast-capable interfaces and their
// addresses, IPv4 first. Link-local IPv6 only when there is nothing else
// (a browser cannot use it without knowing the interface).
func announceInterfaces() ([]net.Interface, []string, error) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, nil, fmt.Errorf("lend: listing network interfaces: %v", err)
	}
	var ifaces []net.Interface
	var v4, v6, v6local []string
	for _, ifi := range all {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		ifaces = append(ifaces, ifi)
		as, _ := ifi.Addrs()
		for _, ad := range as {
			ipn, ok := ad.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() {
				continue
			}
			switch ip := ipn.IP; {
			case ip.To4() != nil:
				v4 = append(v4, ip.String())
			case ip.IsLinkLocalUnicast():
				v6local = append(v6local, ip.String())
			case ip.IsGlobalUnicast():
				v6 = append(v6, ip.String())
			}
		}
	}
	addrs := append(v4, v6...)
	if len(addrs) == 0 {
		addrs = v6local
	}
	if len(ifaces) == 0 || len(addrs) == 0 {
		return nil, nil, errors.New("lend: this PC has no network to announce on: connect it to the same network as the other PC")
	}
	return ifaces, addrs, nil
}

func truncateUTF8(s string, n int) string {
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// Watch reports each lender as it answers (or announces itself), once per
// PC name and host key, until ctx ends. It asks at once, then again after 4
// s and at growing intervals. A record whose TXT ParseTXT refuses, or that
// carries no usable address, is skipped.
func Watch(ctx context.Context, found func(Announcement)) error {
	local := localNets()
	seen := map[string]bool{}
	take := func(e *zeroconf.ServiceEntry) {
		a, ok := fromEntry(e, local)
		if !ok {
			return
		}
		k := a.Name + "\x00" + a.HostKey
		if seen[k] {
			return
		}
		seen[k] = true
		found(a)
	}
	// IPv4 and IPv6, or the one of them this PC has when joining the
	// other's group fails.
	var err error
	for _, ip := range []zeroconf.IPType{zeroconf.IPv4AndIPv6, zeroconf.IPv4, zeroconf.IPv6} {
		var ran bool
		if ran, err = watch(ctx, ip, take); ran || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("lend: looking for lenders on the network: %v", err)
}

// watch runs one zeroconf browse; ran is false when it could not start (it
// then never closes its channel; once it has run, it closes it before it
// returns).
func watch(ctx context.Context, ip zeroconf.IPType, take func(*zeroconf.ServiceEntry)) (ran bool, err error) {
	entries := make(chan *zeroconf.ServiceEntry, 16)
	errc := make(chan error, 1)
	go func() { errc <- zeroconf.Browse(ctx, ServiceType, "local.", entries, zeroconf.SelectIPTraffic(ip)) }()
	for {
		select {
		case e, ok := <-entries:
			if !ok {
				return true, <-errc
			}
			take(e)
		case err := <-errc:
			for {
				select {
				case e, ok := <-entries:
					if !ok {
						return true, err
					}
					take(e)
				default:
					return false, err
				}
			}
		}
	}
}

// Browse lists the lenders that answer within wait, one entry per PC name
// and host key (two PCs claiming one name are two entries), sorted by name.
func Browse(ctx context.Context, wait time.Duration) ([]Announcement, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var list []Announcement
	err := Watch(ctx, func(a Announcement) { list = append(list, a) })
	if err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Name != list[j].Name {
			return list[i].Name < list[j].Name
		}
		return list[i].HostKey < list[j].HostKey
	})
	return list, nil
}

func fromEntry(e *zeroconf.ServiceEntry, local []*net.IPNet) (Announcement, bool) {
	a, err := ParseTXT(e.Text)
	if err != nil || checkPort("ssh port", e.Port) != nil {
		return Announcement{}, false
	}
	a.Port = e.Port
	a.Addrs = orderAddrs(e.AddrIPv4, e.AddrIPv6, local)
	if len(a.Addrs) == 0 {
		return Announcement{}, false
	}
	a.Host = a.Addrs[0]
	return a, true
}

// orderAddrs: IPv4 on one of this PC's own networks first, then other IPv4,
// then global IPv6; link-local IPv6 is dropped (no zone to use it with).
func orderAddrs(v4, v6 []net.IP, local []*net.IPNet) []string {
	onLocal := func(ip net.IP) bool {
		for _, n := range local {
			if n.Contains(ip) {
				return true
			}
		}
		return false
	}
	var near, far, six []string
	seen := map[string]bool{}
	for _, ip := range v4 {
		s := ip.String()
		if ip.To4() == nil || ip.IsUnspecified() || ip.IsLoopback() || ip.IsMulticast() || seen[s] {
			continue
		}
		seen[s] = true
		if onLocal(ip) {
			near = append(near, s)
		} else {
			far = append(far, s)
		}
	}
	for _, ip := range v6 {
		s := ip.String()
		if ip.To4() != nil || !ip.IsGlobalUnicast() || seen[s] {
			continue
		}
		seen[s] = true
		six = append(six, s)
	}
	return append(append(near, far...), six...)
}

func localNets() []*net.IPNet {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []*net.IPNet
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, n)
		}
	}
	return out
}
