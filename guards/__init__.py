"""What the server lets in from outside: files read only under the allowed folders (checked as each
is opened), uploads only within the server's limits, CSV cells that a spreadsheet shows as text, never runs as a
formula, a person's regular expression only when bounded before it is compiled. And what leaves nothing behind: a
job's helper processes die with it (`lifeline`).

Standard library only, so that both `curation` and `inference` use the same checks without either
importing the other (each pulls in heavy engines: MuPDF and OpenCV, or torch).
"""
