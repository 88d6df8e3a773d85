// Run the script of a plateau SVG flame graph against a small DOM and
// check what a user sees after clicks, searches and shared links.
//
//   node flamegraph_dom.js DOC.json CHECKS.json
//
// DOC.json is the SVG as a tree ({tag, attrs, children, text}, written by
// flamegraph_svg2json.py); CHECKS.json lists scenarios.  Prints one
// "PASS what" or "FAIL what: why" line per check.
"use strict";
const fs = require("fs");
const vm = require("vm");

class Text {
	constructor(value, parent) {
		this.nodeType = 3;
		this.nodeValue = value;
		this.parentNode = parent;
	}
	get textContent() {
		return this.nodeValue;
	}
}

class Element {
	constructor(tag, attrs, parent) {
		this.nodeType = 1;
		this.tagName = tag;
		this.nodeName = tag;
		this.attrs = Object.assign({}, attrs);
		this.childNodes = [];
		this.parentNode = parent;
		const el = this;
		this.classList = {
			list() {
				return (el.attrs["class"] || "").split(/\s+/).filter((c) => c);
			},
			add(c) {
				const l = this.list();
				if (!l.includes(c))
					l.push(c);
				el.attrs["class"] = l.join(" ");
			},
			remove(c) {
				el.attrs["class"] = this.list().filter((x) => x !== c).join(" ");
			},
			contains(c) {
				return this.list().includes(c);
			},
		};
	}
	get id() {
		return this.attrs.id || "";
	}
	get children() {
		return this.childNodes.filter((n) => n.nodeType === 1);
	}
	get firstChild() {
		return this.childNodes[0] || null;
	}
	get textContent() {
		return this.childNodes.map((n) => n.textContent).join("");
	}
	set textContent(v) {
		this.childNodes = [new Text(String(v), this)];
	}
	getAttribute(name) {
		return name in this.attrs ? this.attrs[name] : null;
	}
	getAttributeNS(ns, name) {
		for (const k in this.attrs) {
			const colon = k.indexOf(":");
			if (colon > 0 && k.substring(colon + 1) === name &&
			    this.lookupNS(k.substring(0, colon)) === ns)
				return this.attrs[k];
		}
		return null;
	}
	lookupNS(prefix) {
		for (let e = this; e; e = e.parentNode) {
			if (e.attrs && ("xmlns:" + prefix) in e.attrs)
				return e.attrs["xmlns:" + prefix];
		}
		return null;
	}
	setAttribute(name, v) {
		this.attrs[name] = String(v);
	}
	removeAttribute(name) {
		delete this.attrs[name];
	}
	*walk() {
		for (const c of this.children) {
			yield c;
			yield* c.walk();
		}
	}
	getElementsByTagName(tag) {
		return [...this.walk()].filter((e) => e.tagName === tag);
	}
}

function build(json, parent) {
	const el = new Element(json.tag, json.attrs, parent);
	for (const c of json.children) {
		if (typeof c === "string")
			el.childNodes.push(new Text(c, el));
		else
			el.childNodes.push(build(c, el));
	}
	return el;
}

function load(doc, search) {
	const root = build(doc, null);
	const all = () => [root, ...root.walk()];
	const handlers = {};
	const prompts = [];
	const win = {
		location: { search: search || "", pathname: "/graph.svg", hash: "" },
		history: {
			replaceState(state, title, url) {
				const q = url.indexOf("?");
				win.location.search = q < 0 ? "" : url.substring(q);
			},
		},
		addEventListener(type, fn) {
			(handlers[type] = handlers[type] || []).push(fn);
		},
		prompt(msg) {
			prompts.push(msg);
			return win.nextPrompt;
		},
		nextPrompt: null,
	};
	const document = {
		documentElement: root,
		getElementById(id) {
			return all().find((e) => e.id === id) || null;
		},
		getElementsByTagName(tag) {
			return all().filter((e) => e.tagName === tag);
		},
	};
	const ctx = vm.createContext({ window: win, document, console });
	win.document = document;
	const script = document.getElementsByTagName("script")[0].textContent;
	vm.runInContext(script, ctx);
	ctx.init({ target: root });
	const fire = (type, target, extra) => {
		const ev = Object.assign({ target, preventDefault() { ev.prevented = true; } }, extra || {});
		for (const fn of handlers[type] || [])
			fn(ev);
		return ev;
	};
	return { root, document, win, ctx, fire, prompts, script };
}

// Frames by the first line of their title.
function frames(page) {
	const out = [];
	for (const g of page.document.getElementById("frames").children) {
		const title = g.getElementsByTagName("title")[0].textContent.split("\n")[0];
		const rect = g.getElementsByTagName("rect")[0];
		const text = g.getElementsByTagName("text")[0];
		out.push({
			g, rect, text, title,
			name: title.substring(0, title.lastIndexOf(" (")),
			x: parseFloat(rect.getAttribute("x")),
			w: parseFloat(rect.getAttribute("width")),
			y: parseFloat(rect.getAttribute("y")),
			hidden: g.classList.contains("hide"),
			parent: g.classList.contains("parent"),
			fill: rect.getAttribute("fill"),
			label: text.textContent,
		});
	}
	return out;
}

function find(page, title) {
	const f = frames(page).find((x) => x.title.startsWith(title));
	if (!f)
		throw new Error("no frame titled " + title);
	return f;
}

const results = [];
function check(what, cond, why) {
	results.push((cond ? "PASS " : "FAIL ") + what + (cond ? "" : ": " + (why || "")));
}
function near(a, b) {
	return Math.abs(a - b) < 0.051;
}

const doc = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const scenarios = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));

for (const sc of scenarios) {
	const tag = sc.name + ": ";
	let page;
	try {
		page = load(doc, sc.search);
	} catch (e) {
		check(tag + "script loads", false, e.stack);
		continue;
	}
	if (sc.ids) {
		const ids = [...page.script.matchAll(/getElementById\("([^"]+)"\)/g)].map((m) => m[1]);
		const missing = ids.filter((id) => !page.document.getElementById(id));
		check(tag + "every element the script looks up exists (" + ids.join(",") + ")",
		      ids.length >= 6 && missing.length === 0, "missing " + missing.join(","));
	}
	const width = parseFloat(page.root.getAttribute("width"));
	const full = width - 20;
	for (const step of sc.steps || []) {
		try {
			if (step.click)
				page.fire("click", find(page, step.click).rect);
			if (step.clickId)
				page.fire("click", page.document.getElementById(step.clickId));
			if (step.key) {
				page.win.nextPrompt = step.prompt;
				const ev = page.fire("keydown", page.root, step.key);
				check(tag + "key is taken from the browser", ev.prevented);
			}
			if ("prompt" in step && !step.key) {
				page.win.nextPrompt = step.prompt;
				page.fire("click", page.document.getElementById("search"));
			}
			if (step.hover) {
				page.fire("mouseover", find(page, step.hover).rect);
				const d = page.document.getElementById("details").textContent;
				check(tag + "details line for " + step.hover, d.startsWith(step.details), d);
			}
		} catch (e) {
			check(tag + JSON.stringify(step), false, e.stack);
		}
	}
	const fr = sc.expect ? frames(page) : [];
	for (const e of sc.expect || []) {
		const f = fr.find((x) => x.title.startsWith(e.title));
		if (!f) {
			check(tag + e.title, false, "no such frame");
			continue;
		}
		if ("full" in e)
			check(tag + e.title + " fills the width", near(f.x, 10) && near(f.w, full),
			      f.x + "," + f.w);
		if ("x" in e)
			check(tag + e.title + " at x " + e.x, near(f.x, e.x), "x=" + f.x);
		if ("w" in e)
			check(tag + e.title + " width " + e.w, near(f.w, e.w), "w=" + f.w);
		if ("hidden" in e)
			check(tag + e.title + (e.hidden ? " hidden" : " shown"), f.hidden === e.hidden);
		if ("parent" in e)
			check(tag + e.title + (e.parent ? " is a faded ancestor" : " is not faded"),
			      f.parent === e.parent);
		if ("label" in e)
			check(tag + e.title + " labelled " + e.label, f.label === e.label, f.label);
		if ("searched" in e)
			check(tag + e.title + (e.searched ? " highlighted" : " not highlighted"),
			      (f.fill === "rgb(230,0,230)") === e.searched, f.fill);
	}
	if ("matched" in sc)
		check(tag + "matched text", page.document.getElementById("matched").textContent ===
		      sc.matched, page.document.getElementById("matched").textContent);
	if ("url" in sc)
		check(tag + "URL " + sc.url, page.win.location.search === sc.url, page.win.location.search);
	if ("unzoomShown" in sc)
		check(tag + "Reset Zoom " + (sc.unzoomShown ? "shown" : "hidden"),
		      !page.document.getElementById("unzoom").classList.contains("hide") === sc.unzoomShown);
	if ("prompts" in sc)
		check(tag + "search prompts", page.prompts.length === sc.prompts, page.prompts.length);
}
console.log(results.join("\n"));
