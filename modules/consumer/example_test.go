package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/eventstore-service/eventstore/modules/consumer"
)

// charge stands for the work of a handler.
func charge(ctx context.Context, customer string, amount int) error { return nil }

// A worker of the subscription "billing": each order is charged once its
// handler returns nil; an order that cannot be read is parked, a failed
// charge is tried again in 10 seconds. The README's "Go consumers" shows
// this code.
func ExampleClient_Consume() {
	client := consumer.NewClient("http://127.0.0.1:3000", os.Getenv("EVENTSTORE_API_TOKEN"), nil)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	_, err := client.Create(ctx, "billing", "/orders", consumer.Options{Recursive: true, Partitions: 4})
	if err != nil {
		log.Fatal(err)
	}
	err = client.Consume(ctx, "billing", "worker-1", func(ctx context.Context, d consumer.Delivery) error {
		var order struct {
			Customer string `json:"customer"`
			Amount   int    `json:"amount"`
		}
		if err := json.Unmarshal(d.Event.Data, &order); err != nil {
			return consumer.Park("not an order: " + err.Error())
		}
		if err := charge(ctx, order.Customer, order.Amount); err != nil {
			return consumer.Retry(10*time.Second, err)
		}
		return nil // acknowledged, in a batch with others
	}, consumer.ConsumeOptions{Concurrency: 4})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err) // e.g. consumer.ErrConsumerReplaced
	}
}

// A reactor that answers each order with an invoice: the invoice and the
// acknowledgement of the order's delivery are written in one request, so
// that every order has exactly one invoice even when deliveries come again.
func ExampleClient_ConsumeReactions() {
	client := consumer.NewClient("http://127.0.0.1:3000", os.Getenv("EVENTSTORE_API_TOKEN"), nil)
	stats := &consumer.Stats{}
	err := client.ConsumeReactions(context.Background(), "invoicing", "worker-1",
		func(ctx context.Context, d consumer.Delivery) (consumer.Reaction, error) {
			return consumer.Reaction{Events: []consumer.EventCandidate{{
				Source:  "https://billing.example.com",
				Subject: "/invoices/" + strings.TrimPrefix(d.Event.Subject, "/orders/"),
				Type:    "com.example.invoice-issued",
				Data:    map[string]string{"order": d.Event.ID},
			}}}, nil
		}, consumer.ConsumeOptions{Stats: stats, OnError: func(err error) { log.Print(err) }})
	log.Printf("stopped: %v; %d invoices written, %d left to other workers", err, stats.Reactions.Load(), stats.Stale.Load())
}

// Settling by hand, without Consume: acknowledge some deliveries and see
// which of them were stale.
func ExampleClient_Acknowledge() {
	client := consumer.NewClient("http://127.0.0.1:3000", os.Getenv("EVENTSTORE_API_TOKEN"), nil)
	res, err := client.Acknowledge(context.Background(), "billing", "<token>", "<token>")
	switch {
	case err != nil:
		log.Fatal(err)
	case len(res.Stale) > 0:
		log.Printf("%d acknowledged, %d handled elsewhere", res.Settled, len(res.Stale))
	}
}

// A decision across entities: a course takes at most 30 students. The
// boundary is the course's enrolments, tagged as the DCB libraries tag
// them; the write happens only if no enrolment of the course came after
// those read, else Decide reads and decides again. docs/eventql.md §13.1
// shows this code.
func ExampleClient_Decide() {
	client := consumer.NewClient("http://127.0.0.1:3000", os.Getenv("EVENTSTORE_API_TOKEN"), nil)
	ctx := context.Background()
	errFull := errors.New("the course is full")

	// Once: an index on the tags, so that the decision reads only its course's events.
	_, err := client.RegisterDataIndex(ctx, consumer.DataIndex{Name: "tags", Path: "/tags", EventTypes: []string{"io.example.enrolled"}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Decide(ctx, `e.type == "io.example.enrolled" AND e.data.tags CONTAINS "course:c1"`,
		func(enrolments []consumer.Event) ([]consumer.EventCandidate, error) {
			if len(enrolments) >= 30 {
				return nil, errFull
			}
			return []consumer.EventCandidate{{
				Source:  "https://school.example",
				Subject: "/students/7",
				Type:    "io.example.enrolled",
				Data:    map[string][]string{"tags": {"course:c1", "student:7"}},
			}}, nil
		})
	switch {
	case errors.Is(err, errFull):
		log.Print("no place left in c1")
	case err != nil:
		log.Fatal(err)
	}
}
