package pgstore

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// CheckURL returns an error, which never quotes url, unless url is a
// connection string pgx can parse.
func CheckURL(url string) error {
	_, err := poolConfig(url, Options{})
	return err
}

// Describe returns the hosts (host:port, comma-separated, with fallbacks)
// and the database of url, for logs: never the password.
func Describe(url string) (hosts, database string) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "", ""
	}
	return strings.Join(hostList(cfg), ","), cfg.Database
}

// hostList returns host:port of the hosts of cfg in order, each once: pgx
// lists a host twice in a row when it tries TLS first and then without
// (sslmode=prefer, the default).
func hostList(cfg *pgconn.Config) []string {
	list := []string{hostPort(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if h := hostPort(f.Host, f.Port); h != list[len(list)-1] {
			list = append(list, h)
		}
	}
	return list
}

func hostPort(host string, port uint16) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "/") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}
