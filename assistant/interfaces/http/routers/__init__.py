"""One router per area of the API; `app.create_app` includes them all."""
