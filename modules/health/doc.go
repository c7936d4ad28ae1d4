// Package health builds the health report of GET /api/v1/health in the
// "Health Check Response Format for HTTP APIs" (application/health+json).
// Checks are contributed by other modules; the overall status is the worst
// of them, and fail while the service shuts down.
package health
