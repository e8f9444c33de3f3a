"""The tasks: found, validated and listed (`loader`), a card per task kept in an index between
loads (`index`), the browser's search and filters (`search`), `icae tasks check` (`check`),
and the recorded runs shipped with tasks (`recordings`)."""
