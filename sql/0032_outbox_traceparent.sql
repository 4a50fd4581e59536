-- The W3C traceparent of the request that enqueued a message, so that its delivery (a webhook, a
-- Customer Service API call), made later by whichever instance's dispatcher claims it, carries
-- the request's trace. Rows from before, and messages enqueued outside a request, have none.
-- Adding a nullable column without a default changes no row: it takes only a brief lock.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS traceparent text;
