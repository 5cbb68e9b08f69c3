"""The seed scenario's chat prompts: ordinary questions of five kinds, interleaved so that the first N of
them (`seed_scenario.py --prompts N`) still mix the kinds. The first is the seed's own looping prompt."""

FACTS = [
    "What is the capital of France?",
    "Who wrote Romeo and Juliet?",
    "How many planets are in the solar system?",
    "What is the boiling point of water at sea level?",
    "Which ocean is the largest?",
    "What is the chemical symbol for gold?",
    "In which year did the Second World War end?",
    "What is the tallest mountain on Earth?",
    "Who painted the Mona Lisa?",
    "What is the speed of light in a vacuum?",
    "What language is spoken in Brazil?",
    "How many bones are in the adult human body?",
    "What is the largest planet in our solar system?",
]
EXPLANATIONS = [
    "Explain how photosynthesis works.",
    "Why is the sky blue?",
    "How does a refrigerator keep food cold?",
    "Explain what a compiler does.",
    "Why do we have seasons on Earth?",
    "How do vaccines train the immune system?",
    "Explain how the internet routes a message from one computer to another.",
    "What causes the tides?",
    "How does a bicycle stay upright while moving?",
    "Explain the difference between weather and climate.",
    "Why do leaves change colour in autumn?",
    "How does a credit card payment work?",
    "Explain what inflation is.",
]
LISTS = [
    "List five fruits that are high in vitamin C.",
    "Give me a list of ten common English verbs.",
    "List the days of the week in French.",
    "Name five famous scientists and what they are known for.",
    "List some tips for sleeping better.",
    "What are the main parts of a computer? Give a list.",
    "List seven countries in Africa.",
    "Give a packing list for a weekend camping trip.",
    "List the steps to change a flat tyre.",
    "Name six musical instruments.",
    "List five ways to save energy at home.",
    "Give a shopping list for making pancakes.",
    "List the colours of the rainbow in order.",
]
CODE = [
    "Write a Python function that reverses a string.",
    "Write a JavaScript function that returns the largest number in an array.",
    "Write a SQL query that counts the rows in a table named users.",
    "Write a Python function that checks whether a number is prime.",
    "Write a bash command that counts the lines in every .txt file in a folder.",
    "Write a C function that computes the factorial of n.",
    "Write a Python function that returns the Fibonacci numbers below 100.",
    "Write an HTML page with a heading and a paragraph.",
    "Write a Python class for a bank account with deposit and withdraw methods.",
    "Write a regular expression that matches an email address, and explain it.",
    "Write a Python function that merges two sorted lists.",
    "Write a CSS rule that centres a div on the page.",
    "Write a Go function that sums a slice of integers.",
]
TABLES = [
    "Make a table of three planets with their diameter and distance from the sun.",
    "Make a markdown table of four fruits with their colour and taste.",
    "Create a table comparing cats and dogs as pets.",
    "Make a table of the first five chemical elements with their symbols.",
    "Create a markdown table of three programming languages and their typical uses.",
    "Make a table with the months of the year and their number of days.",
    "Create a table of four countries with their capitals and populations.",
    "Make a table of three breakfast foods with their calories and protein.",
    "Create a markdown table of the four seasons and their typical weather.",
    "Make a table of five animals with their habitat and diet.",
]

KINDS = {"fact": FACTS, "explanation": EXPLANATIONS, "list": LISTS, "code": CODE, "table": TABLES}


def seed_prompts():
    """[(kind, prompt)], 62 of them, one of each kind in turn while a kind lasts."""
    out = []
    for i in range(max(len(prompts) for prompts in KINDS.values())):
        for kind, prompts in KINDS.items():
            if i < len(prompts):
                out.append((kind, prompts[i]))
    return out
