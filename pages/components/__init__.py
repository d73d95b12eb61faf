"""The dashboard's parts, shared by the screens in pages/: sign-in and roles (`auth`), the server's checks on
every request (`server`), what every page shares (`common`: the manifest, the sidebar, job panels) and text
shown literally (`escaping`), Review's card grid (`card_grid`), its keys (`keys`), its Pictures view
(`pictures_view`, with `picture_large_view`, `picture_captions`, `like_this`), and the panels of the jobs a
page starts (`bulk_job`, `caption_job`, `picture_job`) and of undo (`undo`). Streamlit lists only the files
directly in pages/ as pages, so nothing here is one."""
