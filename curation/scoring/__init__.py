"""One page in, its scores out: sigma as the original method measured it, the page features beside it,
and the pictures on the page."""
