#!/bin/sh
# generate.sh BINARY OUT: writes a small but varied store with BINARY (the
# eventstore built from the commit the golden directory records) into the
# new data directory OUT/data, and its expected read-events answer into
# OUT/read-events.ndjson. It runs the binary twice, stopping it with SIGTERM
# each time, so that the directory holds both a table (the first run's WAL,
# flushed when the second run opened it) and a WAL.
set -eu
bin=$1
out=$2
port=39517
token=golden-Token-0123456789-abcdefghijklmnopqrstuvwxyz
url=http://127.0.0.1:$port/api/v1
src='"source":"https://library.example.com"'

start() {
	"$bin" run --api-token=$token --data-directory="$out/data" --http-enabled --https-enabled=false \
		--http-port=$port --http-address=127.0.0.1 >/dev/null &
	pid=$!
	for i in $(seq 100); do curl -fs "$url/ping" >/dev/null && return; sleep 0.1; done
	echo "eventstore did not start" >&2
	exit 1
}
stop() {
	kill -TERM $pid
	wait $pid
}
post() { # post ENDPOINT BODY
	curl -fsS -X POST -H "Authorization: Bearer $token" --data-binary "$2" "$url/$1" >/dev/null
}

mkdir -p "$out"
rm -rf "$out/data"
start
post register-event-schema '{"eventType":"io.example.library.book-acquired","schema":{"type":"object","properties":{"title":{"type":"string"},"author":{"type":"string"},"isbn":{"type":"string"}},"required":["title","author"],"additionalProperties":false}}'
post write-events '{"events":[
 {'"$src"',"subject":"/books/42","type":"io.example.library.book-acquired","data":{"title":"2001 – A Space Odyssey","author":"Arthur C. Clarke","isbn":"978-0756906788"}},
 {'"$src"',"subject":"/books/42","type":"io.example.library.book-borrowed","data":{"reader":"/readers/23","until":"2024-06-30"}}]}'
post write-events '{"events":[{'"$src"',"subject":"/readers/23","type":"io.example.library.reader-registered","data":{"name":"Zoë Ñúñez-Østergård","city":"Köln","note":"<script>alert(\"&amp;\")</script> & <b>bold</b>"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"vendor=a,other=b"}]}'
post write-events '{"events":[{'"$src"',"subject":"/books/43","type":"io.example.library.book-acquired","data":{"title":"Der Zauberberg","author":"Thomas Mann"},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}]}'
post write-events '{"events":[{'"$src"',"subject":"/books/42","type":"io.example.library.book-returned","data":{"reader":"/readers/23","late":false,"fee":0,"ratings":[5,4.5,-1e3],"emoji":"📚✓","nothing":null}}],"preconditions":[{"type":"isSubjectOnEventId","payload":{"subject":"/books/42","eventId":"1"}}]}'
stop

start
post write-events '{"events":[{'"$src"',"subject":"/","type":"io.example.library.opened","data":{}},{'"$src"',"subject":"/branches/north/shelves/a-1","type":"io.example.library.shelf-added","data":{"capacity":120,"labels":{"de":"Regal Nord","ja":"北の棚"}}}]}'
post register-event-schema '{"eventType":"io.example.library.reader-warned","schema":{"type":"object","properties":{"reason":{"type":"string","maxLength":200}},"required":["reason"]}}'
post write-events '{"events":[{'"$src"',"subject":"/readers/23","type":"io.example.library.reader-warned","data":{"reason":"Buch \"2001\" ist überfällig\n\ttab & <angle>"}}],"preconditions":[{"type":"isSubjectPopulated","payload":{"subject":"/readers/23"}}]}'
i=0
while [ $i -lt 20 ]; do
	post write-events '{"events":[{'"$src"',"subject":"/books/'$((100 + i % 7))'","type":"io.example.library.book-inspected","data":{"round":'$i',"pad":"'$(printf '%*s' $((i * 13)) '' | tr ' ' x)'"}}]}'
	i=$((i + 1))
done
curl -fsS -X POST -H "Authorization: Bearer $token" --data-binary '{"subject":"/","options":{"recursive":true}}' "$url/read-events" >"$out/read-events.ndjson"
stop
