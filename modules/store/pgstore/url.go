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
	list := []string{hostPort(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if h := hostPort(f.Host, f.Port); h != list[len(list)-1] {
			list = append(list, h)
		}
	}
	return strings.Join(list, ","), cfg.Database
}

func hostPort(host string, port uint16) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "/") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}
