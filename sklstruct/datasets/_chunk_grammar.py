"""The chunk-grammar generator: an English-like chunking corpus drawn from a
small probabilistic grammar shipped with the package, so that examples and
tests run without external data (:func:`make_chunking_corpus`)."""
from bisect import bisect

from sklearn.utils import check_random_state

from ._conll import _is_int

__all__ = ["make_chunking_corpus"]

# Lexicon.  Count nouns: (singular, plural, human?).
_COUNT_NOUNS = [
    ("company", "companies", 0), ("market", "markets", 0), ("price", "prices", 0),
    ("rate", "rates", 0), ("stock", "stocks", 0), ("bond", "bonds", 0),
    ("bank", "banks", 0), ("share", "shares", 0), ("plan", "plans", 0),
    ("cut", "cuts", 0), ("rise", "rises", 0), ("increase", "increases", 0),
    ("decline", "declines", 0), ("report", "reports", 0), ("offer", "offers", 0),
    ("deal", "deals", 0), ("loss", "losses", 0), ("profit", "profits", 0),
    ("sale", "sales", 0), ("program", "programs", 0), ("contract", "contracts", 0),
    ("order", "orders", 0), ("product", "products", 0), ("unit", "units", 0),
    ("firm", "firms", 0), ("fund", "funds", 0), ("change", "changes", 0),
    ("estimate", "estimates", 0), ("return", "returns", 0), ("drop", "drops", 0),
    ("run", "runs", 0), ("charge", "charges", 0), ("issue", "issues", 0),
    ("dividend", "dividends", 0), ("proposal", "proposals", 0),
    ("agreement", "agreements", 0), ("bid", "bids", 0), ("result", "results", 0),
    ("project", "projects", 0), ("plant", "plants", 0), ("car", "cars", 0),
    ("computer", "computers", 0), ("drug", "drugs", 0), ("loan", "loans", 0),
    ("bill", "bills", 0), ("law", "laws", 0), ("cost", "costs", 0),
    ("gain", "gains", 0), ("move", "moves", 0), ("level", "levels", 0),
    ("trade", "trades", 0), ("need", "needs", 0), ("control", "controls", 0),
    ("investor", "investors", 1), ("analyst", "analysts", 1),
    ("official", "officials", 1), ("executive", "executives", 1),
    ("trader", "traders", 1), ("president", "presidents", 1),
    ("chairman", "chairmen", 1), ("manager", "managers", 1),
    ("worker", "workers", 1), ("customer", "customers", 1),
    ("lawyer", "lawyers", 1), ("spokesman", "spokesmen", 1),
    ("director", "directors", 1), ("economist", "economists", 1),
]
_MASS_NOUNS = [
    "money", "revenue", "growth", "interest", "trading", "debt", "income",
    "management", "oil", "steel", "equipment", "software", "inflation", "demand",
    "capital", "support", "research", "news", "credit", "production", "spending",
    "insurance", "cash", "business", "control", "trade",
]
# Nouns used as prenominal modifiers ("interest rate", "stock market").
_NOUN_MODIFIERS = [
    "interest", "stock", "bond", "oil", "computer", "tax", "trade", "bank",
    "insurance", "steel", "auto", "market", "price", "government", "software",
    "debt", "drug", "sales", "credit", "growth",
]
_ADJECTIVES = [
    ("new", "JJ"), ("big", "JJ"), ("small", "JJ"), ("major", "JJ"), ("large", "JJ"),
    ("high", "JJ"), ("low", "JJ"), ("strong", "JJ"), ("weak", "JJ"), ("good", "JJ"),
    ("bad", "JJ"), ("important", "JJ"), ("federal", "JJ"), ("foreign", "JJ"),
    ("recent", "JJ"), ("final", "JJ"), ("early", "JJ"), ("last", "JJ"),
    ("next", "JJ"), ("current", "JJ"), ("financial", "JJ"), ("economic", "JJ"),
    ("political", "JJ"), ("public", "JJ"), ("private", "JJ"), ("annual", "JJ"),
    ("net", "JJ"), ("total", "JJ"), ("common", "JJ"), ("national", "JJ"),
    ("other", "JJ"), ("several", "JJ"), ("many", "JJ"), ("close", "JJ"),
    ("more", "JJR"), ("higher", "JJR"), ("lower", "JJR"), ("better", "JJR"),
    ("less", "JJR"), ("biggest", "JJS"), ("largest", "JJS"), ("most", "JJS"),
]
_PLAIN_ADJECTIVES = [a for a, pos in _ADJECTIVES if pos == "JJ"]
_PRED_ADJECTIVES = [
    "strong", "weak", "likely", "unlikely", "available", "difficult", "profitable",
    "expensive", "cheap", "important", "high", "low", "good", "bad", "unclear",
    "confident", "concerned", "optimistic", "uncertain", "ready", "close", "stable",
]
_DEGREE_ADVERBS = [("very", "RB"), ("more", "RBR"), ("less", "RBR"), ("too", "RB"),
                   ("so", "RB"), ("still", "RB")]
_FIRST_NAMES = ["John", "Robert", "Mary", "James", "David", "Susan", "Richard"]
_SURNAMES = ["Smith", "Jones", "Brown", "Miller", "Wilson", "Baker", "Lee", "Clark"]
_ORGS = [["IBM"], ["Ford"], ["Sony"], ["Chrysler"], ["General", "Motors"],
         ["Texas", "Instruments"], ["Merrill", "Lynch"], ["Boeing"], ["Exxon"],
         ["Congress"], ["Wall", "Street"], ["the", "Treasury"]]
_PLACES = [["Japan"], ["Tokyo"], ["London"], ["Texas"], ["California"],
           ["New", "York"], ["Washington"], ["Europe"], ["China"], ["Germany"]]
_TIME_NOUNS = ["year", "week", "month", "quarter"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_NUMBERS = ["two", "three", "five", "10", "15", "20", "30", "50", "100", "1.5",
            "2.5", "4.2", "8.9", "12", "25", "75"]

# Verbs: (base, 3rd singular, past, past participle, gerund, frames).
# Frames: T transitive, I intransitive, D double object, S clausal complement,
# V to-infinitive, P+particle transitive phrasal verb, Q particle intransitive.
_VERBS = [
    ("buy", "buys", "bought", "bought", "buying", "T"),
    ("sell", "sells", "sold", "sold", "selling", "TD"),
    ("cut", "cuts", "cut", "cut", "cutting", "TI"),
    ("raise", "raises", "raised", "raised", "raising", "T"),
    ("reduce", "reduces", "reduced", "reduced", "reducing", "T"),
    ("report", "reports", "reported", "reported", "reporting", "TS"),
    ("offer", "offers", "offered", "offered", "offering", "TDV"),
    ("expect", "expects", "expected", "expected", "expecting", "TSV"),
    ("acquire", "acquires", "acquired", "acquired", "acquiring", "T"),
    ("increase", "increases", "increased", "increased", "increasing", "TI"),
    ("control", "controls", "controlled", "controlled", "controlling", "T"),
    ("approve", "approves", "approved", "approved", "approving", "T"),
    ("reject", "rejects", "rejected", "rejected", "rejecting", "T"),
    ("need", "needs", "needed", "needed", "needing", "TV"),
    ("make", "makes", "made", "made", "making", "T"),
    ("take", "takes", "took", "taken", "taking", "T"),
    ("hold", "holds", "held", "held", "holding", "T"),
    ("like", "likes", "liked", "liked", "liking", "T"),
    ("plan", "plans", "planned", "planned", "planning", "TV"),
    ("want", "wants", "wanted", "wanted", "wanting", "TV"),
    ("agree", "agrees", "agreed", "agreed", "agreeing", "VS"),
    ("decide", "decides", "decided", "decided", "deciding", "VS"),
    ("hope", "hopes", "hoped", "hoped", "hoping", "VS"),
    ("try", "tries", "tried", "tried", "trying", "V"),
    ("rise", "rises", "rose", "risen", "rising", "I"),
    ("fall", "falls", "fell", "fallen", "falling", "I"),
    ("decline", "declines", "declined", "declined", "declining", "I"),
    ("jump", "jumps", "jumped", "jumped", "jumping", "I"),
    ("drop", "drops", "dropped", "dropped", "dropping", "IT"),
    ("close", "closes", "closed", "closed", "closing", "IT"),
    ("trade", "trades", "traded", "traded", "trading", "I"),
    ("run", "runs", "ran", "run", "running", "TI"),
    ("gain", "gains", "gained", "gained", "gaining", "IT"),
    ("climb", "climbs", "climbed", "climbed", "climbing", "I"),
    ("give", "gives", "gave", "given", "giving", "D"),
    ("send", "sends", "sent", "sent", "sending", "D"),
    ("pay", "pays", "paid", "paid", "paying", "DT"),
    ("tell", "tells", "told", "told", "telling", "D"),
    ("show", "shows", "showed", "shown", "showing", "DTS"),
    ("lend", "lends", "lent", "lent", "lending", "D"),
    ("say", "says", "said", "said", "saying", "S"),
    ("think", "thinks", "thought", "thought", "thinking", "S"),
    ("believe", "believes", "believed", "believed", "believing", "S"),
    ("note", "notes", "noted", "noted", "noting", "S"),
    ("argue", "argues", "argued", "argued", "arguing", "S"),
    ("announce", "announces", "announced", "announced", "announcing", "TS"),
    ("estimate", "estimates", "estimated", "estimated", "estimating", "TS"),
    ("charge", "charges", "charged", "charged", "charging", "T"),
    ("issue", "issues", "issued", "issued", "issuing", "T"),
    ("return", "returns", "returned", "returned", "returning", "TI"),
    ("change", "changes", "changed", "changed", "changing", "TI"),
    ("fund", "funds", "funded", "funded", "funding", "T"),
    ("price", "prices", "priced", "priced", "pricing", "T"),
    ("rate", "rates", "rated", "rated", "rating", "T"),
    ("lower", "lowers", "lowered", "lowered", "lowering", "T"),
    ("post", "posts", "posted", "posted", "posting", "T"),
    ("build", "builds", "built", "built", "building", "T"),
    ("lead", "leads", "led", "led", "leading", "T"),
    ("seek", "seeks", "sought", "sought", "seeking", "TV"),
    ("see", "sees", "saw", "seen", "seeing", "TS"),
    ("set", "sets", "set", "set", "setting", "P"),
    ("pick", "picks", "picked", "picked", "picking", "P"),
    ("shut", "shuts", "shut", "shut", "shutting", "P"),
    ("step", "steps", "stepped", "stepped", "stepping", "Q"),
    ("go", "goes", "went", "gone", "going", "Q"),
    ("give", "gives", "gave", "given", "giving", "P"),
    ("take", "takes", "took", "taken", "taking", "P"),
]
_PARTICLES = {"set": ["up"], "pick": ["up"], "shut": ["down"], "step": ["down"],
              "go": ["up", "down"], "give": ["up"], "take": ["over"]}
_MODALS = ["will", "would", "could", "may", "might", "should", "can"]
_PREVERB_ADVERBS = ["also", "recently", "still", "already", "never", "quickly"]
_MANNER_ADVERBS = ["sharply", "slightly", "again", "later", "quickly", "also",
                   "recently", "still", "yesterday", "more", "higher", "lower",
                   "down", "up"]
_SENTENCE_ADVERBS = ["However", "Meanwhile", "Still", "Also", "Instead", "Now"]
_PREPOSITIONS = [
    ("of", "IN", 6.0), ("in", "IN", 4.0), ("for", "IN", 2.5), ("on", "IN", 1.5),
    ("at", "IN", 1.5), ("with", "IN", 1.5), ("from", "IN", 1.5), ("by", "IN", 1.0),
    ("to", "TO", 2.0), ("into", "IN", 0.6), ("about", "IN", 0.6), ("over", "IN", 0.6),
    ("after", "IN", 0.5), ("before", "IN", 0.4), ("like", "IN", 0.6),
    ("since", "IN", 0.3), ("as", "IN", 0.5), ("under", "IN", 0.4),
    ("that", "IN", 0.0), ("up", "IN", 0.2), ("down", "IN", 0.2),
]
_SUBORDINATORS = ["because", "while", "although", "if", "after", "before", "as",
                  "since", "that", "when"]


class _Table:
    """Weighted categorical table sampled by bisection on cumulative weights."""

    __slots__ = ("items", "cum", "total")

    def __init__(self, pairs):
        self.items = [item for item, _ in pairs]
        self.cum, total = [], 0.0
        for _, w in pairs:
            total += w
            self.cum.append(total)
        self.total = total


_PREP_TABLE = _Table([((w, p), wt) for w, p, wt in _PREPOSITIONS if wt > 0])
_HUMAN_NOUNS = [n for n in _COUNT_NOUNS if n[2]]
_VERBS_BY_FRAME = {
    f: [v for v in _VERBS if f in v[5]] for f in "TIDSVPQ"
}
# How often each complement frame is chosen for a main verb.
_FRAME_TABLE = _Table([("T", 5.0), ("I", 2.5), ("D", 1.5), ("S", 1.5),
                       ("V", 2.5), ("P", 0.6), ("Q", 0.3), ("C", 1.5)])


class _ChunkGrammar:
    """Random generator for :func:`make_chunking_corpus`.

    All randomness comes from ``rng.random_sample`` drawn in blocks, so one
    seed always gives one corpus.
    """

    def __init__(self, rng):
        self._rng = rng
        self._buf = []
        self._pos = 0
        self.words = []
        self.tags = []

    # -- random primitives -------------------------------------------------
    def u(self):
        pos = self._pos
        if pos == len(self._buf):
            self._buf = self._rng.random_sample(8192).tolist()
            pos = 0
        self._pos = pos + 1
        return self._buf[pos]

    def p(self, prob):
        return self.u() < prob

    def pick(self, seq):
        return seq[int(self.u() * len(seq))]

    def wpick(self, table):
        i = bisect(table.cum, self.u() * table.total)
        return table.items[min(i, len(table.items) - 1)]

    # -- output --------------------------------------------------------------
    def chunk(self, label, tokens):
        words, tags = self.words, self.tags
        tag = "B-" + label
        for tok in tokens:
            words.append(tok)
            tags.append(tag)
            tag = "I-" + label
        return tokens

    def o(self, word, pos):
        self.words.append((word, pos))
        self.tags.append("O")

    # -- noun phrases ----------------------------------------------------------
    def base_np(self, role, pronoun=True):
        """Emit one NP chunk (two with a possessive); return (number, human)."""
        r = self.u()
        if not pronoun:
            r = 0.14 + 0.86 * r
        if r < (0.14 if role == "subj" else 0.10):
            if role == "subj":
                w = self.pick(["he", "she", "it", "it", "they", "they", "we"])
            else:
                w = self.pick(["him", "her", "it", "it", "them", "them", "us"])
            self.chunk("NP", [(w, "PRP")])
            return ("pl" if w in ("they", "we", "them", "us") else "sg"), w != "it"
        if r < 0.26:
            toks, human = self.name_tokens()
            if not self.p(0.15):
                self.chunk("NP", toks)
                return "sg", human
            # "[NP Mr. Smith] [NP 's new plan]"
            self.chunk("NP", toks)
            toks = [("'s", "POS")]
            number, human = self.noun_body(toks, determiner=False)
            self.chunk("NP", toks)
            return number, human
        if r < 0.34 and role != "subj":
            self.quantity_np()
            return "pl", False
        toks = []
        number, human = self.noun_body(toks, determiner=True)
        if len(toks) > 1 and toks[0][1] == "DT" and self.p(0.06):
            # "[NP the company] [NP 's shares]", "[NP the banks] [NP ' loans]"
            self.chunk("NP", toks)
            toks = [("'", "POS") if toks[-1][1] == "NNS" else ("'s", "POS")]
            number, human = self.noun_body(toks, determiner=False)
        self.chunk("NP", toks)
        return number, human

    def noun_body(self, toks, determiner):
        """Append (determiner) (adjectives) (modifier) head to ``toks``."""
        mass = self.p(0.3)
        number = "sg" if mass or self.p(0.5) else "pl"
        human = False
        if mass:
            head = self.pick(_MASS_NOUNS)
            hpos = "NN"
        else:
            entry = self.pick(_COUNT_NOUNS)
            human = bool(entry[2])
            head, hpos = (entry[0], "NN") if number == "sg" else (entry[1], "NNS")
        x = self.u()
        if not determiner:
            pass
        elif number == "sg" and not mass:
            if x < 0.5:
                toks.append(("the", "DT"))
            elif x < 0.75:
                toks.append(("a", "DT"))
            elif x < 0.85:
                toks.append((self.pick(["this", "that", "each", "every", "no", "another"]),
                             "DT"))
            else:
                toks.append((self.pick(["its", "their", "his", "our"]), "PRP$"))
        else:
            if x < 0.7:
                pass
            elif x < 0.87:
                toks.append(("the", "DT"))
            elif x < 0.92:
                if number == "pl":
                    toks.append((self.pick(["these", "those", "some", "all", "both"]), "DT"))
                else:
                    toks.append((self.pick(["this", "that", "some", "no", "any"]), "DT"))
            else:
                toks.append((self.pick(["its", "their", "his", "our"]), "PRP$"))
        if number == "pl" and not mass and self.p(0.1):
            toks.append((self.pick(_NUMBERS), "CD"))
        x = self.u()
        n_adj = 0 if x < 0.5 else (1 if x < 0.87 else 2)
        if n_adj:
            if self.p(0.08):  # "a very big deal"
                toks.append(self.pick(_DEGREE_ADVERBS[:3]))
                toks.append((self.pick(_PLAIN_ADJECTIVES), "JJ"))
            else:
                adj = self.pick(_ADJECTIVES)
                if number == "sg" and adj[0] in ("many", "several"):
                    adj = ("new", "JJ")
                toks.append(adj)
            if n_adj == 2:
                toks.append((self.pick(_PLAIN_ADJECTIVES), "JJ"))
        x = self.u()
        if x < 0.3:
            toks.append((self.pick(_NOUN_MODIFIERS), "NN"))
        elif x < 0.38:
            toks.extend((w, "NNP") for w in self.pick(_ORGS + _PLACES) if w != "the")
        toks.append((head, hpos))
        if not mass and self.p(0.05):
            toks.append(("and", "CC"))
            entry = self.pick(_COUNT_NOUNS)
            toks.append((entry[1], "NNS") if number == "pl" else (entry[0], "NN"))
        if toks[0][0] == "a" and toks[1][0][0] in "aeiou":
            toks[0] = ("an", "DT")
        return number, human

    def name_tokens(self):
        x = self.u()
        if x < 0.4:
            toks = [(w, "NNP") for w in self.pick(_ORGS)]
            human = False
            if toks[0][0] == "the":
                toks[0] = ("the", "DT")
        elif x < 0.6:
            toks = [(w, "NNP") for w in self.pick(_PLACES)]
            human = False
        else:
            human = True
            y = self.u()
            if y < 0.4:
                toks = [(self.pick(["Mr.", "Ms."]), "NNP"), (self.pick(_SURNAMES), "NNP")]
            elif y < 0.8:
                toks = [(self.pick(_FIRST_NAMES), "NNP"), (self.pick(_SURNAMES), "NNP")]
            else:
                toks = [(self.pick(_SURNAMES), "NNP")]
        return toks, human

    def quantity_np(self):
        toks = []
        if self.p(0.2):
            toks.append((self.pick(["about", "nearly", "only", "almost"]), "RB"))
        money = self.p(0.4)
        if money:
            toks.append(("$", "$"))
        toks.append((self.pick(_NUMBERS), "CD"))
        if self.p(0.5):
            toks.append((self.pick(["million", "billion"]), "CD"))
        if not money:
            x = self.u()
            if x < 0.45:
                toks.append(("%", "NN"))
            else:
                toks.append((self.pick(["shares", "cars", "points", "years",
                                        "workers", "plants", "loans", "units"]), "NNS"))
        self.chunk("NP", toks)

    def time_np(self):
        x = self.u()
        if x < 0.6:
            first = self.pick([("last", "JJ"), ("next", "JJ"), ("this", "DT"),
                               ("this", "DT")])
            self.chunk("NP", [first, (self.pick(_TIME_NOUNS), "NN")])
        elif x < 0.8:
            self.chunk("NP", [(self.pick(_DAYS), "NNP")])
        else:
            self.chunk("NP", [(self.pick(["yesterday", "today"]), "NN")])

    def np(self, role, depth):
        """A full noun phrase: base NP plus PP, relative clause, coordination."""
        number, human = self.base_np(role)
        if depth < 2 and self.words[-1][1] != "PRP":
            x = self.u()
            if x < 0.27:
                self.pp(depth + 1, of_bias=True)
            elif x < 0.34:
                self.relative(number, human, depth + 1)
            elif x < 0.38:
                self.o("and", "CC")
                self.base_np(role, pronoun=False)
                number = "pl"
            elif x < 0.41 and human and role == "subj":
                self.o(",", ",")
                self.base_np("obj")
                if self.p(0.5):
                    self.pp(depth + 1, of_bias=True)
                self.o(",", ",")
        return number, human

    def pp(self, depth, of_bias=False):
        prep = self.wpick(_PREP_TABLE)
        while not of_bias and prep[0] == "of":
            prep = self.wpick(_PREP_TABLE)
        self.chunk("PP", [prep])
        if prep[0] in ("to", "from", "by", "about") and self.p(0.3):
            self.quantity_np()
        else:
            self.np("obj", depth + 1)

    def relative(self, number, human, depth):
        x = self.u()
        if human and x < 0.5:
            rel = ("who", "WP")
        elif x < 0.75:
            rel = ("that", "WDT")
        else:
            rel = ("which", "WDT")
        self.chunk("NP", [rel])
        if self.p(0.7):
            self.vp(number, depth)
        else:  # object relative: "the plan that the company announced"
            subj_number, _ = self.base_np("subj")
            verb = self.pick(_VERBS_BY_FRAME["T"])
            self.verb_group(verb, subj_number)
            self.adjuncts(depth, 0.3)

    # -- verb phrases ------------------------------------------------------------
    def verb_group(self, verb, number, passive=False):
        """Emit the VP chunk; return the list of its tokens."""
        base, vbz, vbd, vbn, vbg, _ = verb
        toks = []
        x = self.u()
        if passive:
            aux = self.pick([("is", "VBZ"), ("was", "VBD")] if number == "sg"
                            else [("are", "VBP"), ("were", "VBD")])
            toks.append(aux)
            if self.p(0.15):
                toks.append((self.pick(_PREVERB_ADVERBS), "RB"))
            toks.append((vbn, "VBN"))
        elif x < 0.35:
            toks.append((vbd, "VBD"))
        elif x < 0.6:
            toks.append((vbz, "VBZ") if number == "sg" else (base, "VBP"))
        elif x < 0.8:
            toks.append((self.pick(_MODALS), "MD"))
            if self.p(0.35):
                toks.append((self.pick(["also", "not", "still", "probably"]), "RB"))
            toks.append((base, "VB"))
        elif x < 0.92:
            if number == "sg":
                toks.append(self.pick([("has", "VBZ"), ("had", "VBD")]))
            else:
                toks.append(self.pick([("have", "VBP"), ("had", "VBD")]))
            if self.p(0.3):
                toks.append((self.pick(_PREVERB_ADVERBS), "RB"))
            toks.append((vbn, "VBN"))
        else:
            toks.append(("is", "VBZ") if number == "sg" else ("are", "VBP"))
            toks.append((vbg, "VBG"))
        if len(toks) == 1 and self.p(0.12):
            self.chunk("ADVP", [(self.pick(_PREVERB_ADVERBS), "RB")])
        return self.chunk("VP", toks)

    def vp(self, number, depth):
        frame = self.wpick(_FRAME_TABLE)
        if frame == "C":
            self.copula(number, depth)
            return
        verb = self.pick(_VERBS_BY_FRAME[frame])
        passive = frame in "TD" and self.p(0.12)
        toks = self.verb_group(verb, number, passive)
        if frame == "V" and not passive:
            # "plans to cut": the infinitive joins the verb chunk.
            frame = self.pick("TTTIID")
            verb = self.pick(_VERBS_BY_FRAME[frame])
            extra = [("to", "TO"), (verb[0], "VB")]
            self.words.extend(extra)
            self.tags.extend(["I-VP"] * 2)
            toks = toks + extra
        if passive:
            if self.p(0.35):
                self.chunk("PP", [("by", "IN")])
                self.np("obj", depth + 1)
            self.adjuncts(depth, 0.5)
            return
        if frame == "T":
            self.np("obj", depth)
        elif frame == "D":
            if self.p(0.7):  # double object: "gave [the man] [a book]"
                self.base_np("obj")
                self.np("obj", depth)
            else:
                self.np("obj", depth)
                self.chunk("PP", [("to", "TO")])
                self.np("obj", depth + 1)
        elif frame == "I":
            x = self.u()
            if x < 0.3:
                self.quantity_np()
            elif x < 0.5:
                self.chunk("ADVP", [(self.pick(_MANNER_ADVERBS), "RB")])
            if self.p(0.35):
                self.chunk("PP", [("to", "TO")])
                self.quantity_np()
                if self.p(0.4):
                    self.chunk("PP", [("from", "IN")])
                    self.quantity_np()
        elif frame == "S":
            if depth < 2:
                if self.p(0.6):
                    self.chunk("SBAR", [("that", "IN")])
                self.clause(depth + 1)
                return
            self.np("obj", depth)
        elif frame == "P":
            self.chunk("PRT", [(self.pick(_PARTICLES[verb[0]]), "RP")])
            self.np("obj", depth)
        elif frame == "Q":
            self.chunk("PRT", [(self.pick(_PARTICLES[verb[0]]), "RP")])
        self.adjuncts(depth, 0.6)

    def copula(self, number, depth):
        x = self.u()
        if x < 0.75:
            cop = ([("is", "VBZ"), ("was", "VBD")] if number == "sg"
                   else [("are", "VBP"), ("were", "VBD")])
            self.chunk("VP", [self.pick(cop)])
        else:
            self.chunk("VP", [(self.pick(_MODALS), "MD"), ("be", "VB")])
        x = self.u()
        if x < 0.6:
            toks = []
            if self.p(0.3):
                toks.append(self.pick(_DEGREE_ADVERBS))
            toks.append((self.pick(_PRED_ADJECTIVES), "JJ"))
            self.chunk("ADJP", toks)
            if self.p(0.2):
                self.pp(depth + 1)
        elif x < 0.85:
            self.np("obj", depth)
        else:
            self.pp(depth + 1)
        self.adjuncts(depth, 0.2)

    def adjuncts(self, depth, prob):
        while self.p(prob):
            x = self.u()
            if x < 0.45:
                self.pp(depth + 1)
            elif x < 0.75:
                self.time_np()
            elif x < 0.85:
                self.chunk("ADVP", [(self.pick(_MANNER_ADVERBS), "RB")])
            elif x < 0.93 and depth < 2:
                # purpose infinitive: "[VP to cut] [NP costs]"
                self.chunk("VP", [("to", "TO"), (self.pick(_VERBS_BY_FRAME["T"])[0], "VB")])
                self.np("obj", depth + 1)
            elif depth < 1:
                self.subordinate(depth + 1)
            prob *= 0.5

    def subordinate(self, depth):
        sub = self.pick(_SUBORDINATORS)
        if sub == "when":
            self.chunk("ADVP", [("when", "WRB")])
        elif sub == "that":
            self.chunk("SBAR", [("so", "IN"), ("that", "IN")])
        else:
            self.chunk("SBAR", [(sub, "IN")])
        self.clause(depth)

    # -- clauses and sentences -------------------------------------------------
    def clause(self, depth):
        number, _ = self.np("subj", depth)
        self.vp(number, depth)

    def sentence(self):
        self.words = []
        self.tags = []
        x = self.u()
        if x < 0.10:
            self.pp(1)
            self.o(",", ",")
        elif x < 0.16:
            self.chunk("ADVP", [(self.pick(_SENTENCE_ADVERBS), "RB")])
            self.o(",", ",")
        elif x < 0.22:
            self.subordinate(1)
            self.o(",", ",")
        elif x < 0.26:
            self.time_np()
            self.o(",", ",")
        self.clause(0)
        x = self.u()
        if x < 0.12:
            if self.p(0.5):
                self.o(",", ",")
            self.o(self.pick(["and", "but", "and", "or"]), "CC")
            self.clause(1)
        elif x < 0.2:
            self.o(",", ",")
            number, _ = self.base_np("subj")
            self.chunk("VP", [("said", "VBD")] if self.p(0.6)
                       else [("says", "VBZ") if number == "sg" else ("say", "VBP")])
        self.o(".", ".")
        return self.words, self.tags


def make_chunking_corpus(n_sentences=1000, random_state=None):
    """Generate an English-like chunking corpus from a probabilistic grammar.

    Sentences are drawn from a small hand-written stochastic grammar with a
    lexicon of about 450 word forms.  Tokens are ``(word, POS)`` tuples with
    Penn Treebank tags and labels are IOB2 chunk tags in the style of the
    CoNLL-2000 shared task (``B-NP``, ``I-NP``, ``B-VP``, ``I-VP``,
    ``B-PP``, ``B-ADJP``, ``B-ADVP``, ``B-SBAR``, ``B-PRT``, ``O``).

    The grammar, informally (``?`` optional, ``|`` alternatives)::

        S      -> (PP , | ADVP , | SBAR , | NPtime ,)? CLAUSE
                  (,? CC CLAUSE | , NP said)? .
        CLAUSE -> NP VP
        NP     -> BASENP (PP | RELCL | and BASENP | , BASENP ,)?
        BASENP -> PRP | NNP+ | RB? $? CD CD? (NN|NNS)?
                | (DT|PRP$)? (RB? JJ)* NN? (NN|NNS) (CC NN|NNS)?
        RELCL  -> (that|which|who) (VP | BASENP VERB)
        VP     -> VERB (NP | BASENP NP | NP to NP | (that)? CLAUSE
                        | RP NP | QUANTITY? (to QUANTITY (from QUANTITY)?)?)
                  ADJUNCT*
                | COPULA (ADJP | NP | PP) ADJUNCT*
        VERB   -> VBD | VBZ | VBP | MD RB? VB | has RB? VBN | is VBG
                | is RB? VBN (passive) ; optionally followed by "to VB"
        ADJUNCT-> PP | NPtime | ADVP | SBAR CLAUSE
        PP     -> IN NP

    Recursion (PP attachment, relative clauses, clausal complements) is
    depth-limited and sentences outside 5..40 tokens are redrawn, giving a
    mean length of about 17 tokens.  The corpus is ambiguous in the ways
    that make chunking a structured problem:

    * adjacent noun phrases ("gave [the man] [a book]", "sold [the
      company] [last year]", "[stocks] [investors] like") make ``B-NP``
      versus ``I-NP`` depend on the preceding tags, not on the word;
    * many words take several POS tags or chunk tags: "that" (IN/DT/WDT),
      "plans", "cut", "rate", "rise", "run" (noun/verb), "like" (IN/VB),
      "up"/"down" (RP/IN/RB), "more" (JJR/RBR), "to" (TO in a PP or inside
      a verb chunk), "after"/"before"/"as" (preposition or subordinator),
      "and" (inside an NP chunk or between chunks);
    * bare plurals, compound nouns and optional determiners mean the same
      ``(word, POS)`` pair starts a chunk in one context and continues one
      in another.

    As a result a tagger that labels each ``(word, POS)`` pair with its most
    frequent chunk tag reaches only about 87% token accuracy, while one that
    also conditions on the previous gold tag reaches about 97%.

    Parameters
    ----------
    n_sentences : int, default=1000
        Number of sentences to generate (positive).
    random_state : int, RandomState instance or None, default=None
        Seed or generator; the same seed always gives the same corpus.

    Returns
    -------
    X : list of list of tuple of (str, str)
        Sentences of ``(word, POS)`` tokens.
    y : list of list of str
        IOB2 chunk tags.

    Examples
    --------
    >>> X, y = make_chunking_corpus(2, random_state=0)
    >>> len(X), all(len(s) == len(t) for s, t in zip(X, y))
    (2, True)
    """
    if not _is_int(n_sentences) or n_sentences < 1:
        raise ValueError(f"n_sentences must be a positive int, got {n_sentences!r}.")
    rng = check_random_state(random_state)
    grammar = _ChunkGrammar(rng)
    X, y = [], []
    while len(X) < n_sentences:
        words, tags = grammar.sentence()
        if 5 <= len(words) <= 40:
            X.append(words)
            y.append(tags)
    return X, y
